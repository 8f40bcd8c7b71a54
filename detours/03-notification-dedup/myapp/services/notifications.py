from datetime import datetime, time, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from myapp.models import Notification

ONCE_A_WEEK = {"top3"}  # kinds a member gets at most once per week


async def notify(db: AsyncSession, user_id: int, kind: str, text: str, now: datetime) -> None:
    if kind in ONCE_A_WEEK:
        monday = datetime.combine(now.date() - timedelta(days=now.weekday()), time(0), now.tzinfo)
        # FIX: skip a member who already got this kind of notification this week.
        # ESCAPES: it sees committed rows only, and guards this consumer alone, not the wallet.
        already = await db.scalar(
            select(Notification.id)
            .where(Notification.user_id == user_id, Notification.kind == kind,
                   Notification.created_at >= monday)
            .limit(1)
        )
        if already is not None:
            return
    db.add(Notification(user_id=user_id, kind=kind, text=text, created_at=now))
    await db.flush()
