from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

FENCE = text(
    "UPDATE fencing_tokens SET token = :token "
    "WHERE resource = :resource AND token < :token RETURNING token"
)


async def check_token(db: AsyncSession, resource: str, token: int) -> bool:
    """Record `token` as the highest `resource` has seen, inside the caller's transaction.

    False means the resource has already seen this token or a newer one: the write is refused.
    The resource's row is there from the payouts of earlier weeks.
    The row stays locked until the caller commits or rolls back; a concurrent writer waits.
    """
    row = (await db.execute(FENCE, {"resource": resource, "token": token})).first()
    return row is not None
