from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from myapp.models import Notification


async def notify(db: AsyncSession, user_id: int, kind: str, text: str, now: datetime) -> None:
    db.add(Notification(user_id=user_id, kind=kind, text=text, created_at=now))
    await db.flush()
