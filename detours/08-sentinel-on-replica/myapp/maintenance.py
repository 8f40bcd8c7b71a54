"""Housekeeping that genuinely has to run on every tick."""

from datetime import datetime, timedelta

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from myapp.models import Thread

ZOMBIE_AFTER = timedelta(days=30)


async def close_zombie_threads(db: AsyncSession, now: datetime) -> int:
    result = await db.execute(
        update(Thread)
        .where(Thread.closed.is_(False), Thread.last_activity_at < now - ZOMBIE_AFTER)
        .values(closed=True)
    )
    return result.rowcount
