from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from myapp.models import TokenTransaction


async def credit(db: AsyncSession, user_id: int, amount: int, reason: str, now: datetime) -> None:
    db.add(TokenTransaction(user_id=user_id, amount=amount, reason=reason, created_at=now))
    await db.flush()


async def balance(db: AsyncSession, user_id: int) -> int:
    total = await db.scalar(
        select(func.coalesce(func.sum(TokenTransaction.amount), 0)).where(
            TokenTransaction.user_id == user_id
        )
    )
    return int(total)
