"""Housekeeping that genuinely has to run on every tick: close threads gone quiet."""

from datetime import datetime, timedelta

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from myapp.models import Thread

ZOMBIE_AFTER = timedelta(days=30)


async def run(db: AsyncSession, now: datetime) -> str:
    """Close the zombie threads as of `now`. Runs in the caller's transaction; never commits."""
    result = await db.execute(
        update(Thread)
        .where(Thread.closed.is_(False), Thread.last_activity_at < now - ZOMBIE_AFTER)
        .values(closed=True)
    )
    return f"closed {result.rowcount} zombie threads"
