from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

CLAIM = text(
    "INSERT INTO worker_runs (name, key) VALUES (:name, :key) "
    "ON CONFLICT (name, key) DO NOTHING RETURNING 1"
)


async def claim_run(db: AsyncSession, name: str, key: str) -> bool:
    """Claim one run of `name` for slot `key` inside the caller's transaction.

    True means this transaction inserted the row and owns the run. The row commits with the
    work or disappears with its rollback; a concurrent claimer waits for us and then gets False.
    """
    row = (await db.execute(CLAIM, {"name": name, "key": key})).first()
    return row is not None
