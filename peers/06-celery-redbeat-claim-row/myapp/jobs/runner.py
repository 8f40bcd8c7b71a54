"""The one path every caller runs a job through: the scheduler library's job and the tests."""

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from myapp.jobs import JOBS


class UnknownJob(LookupError):
    def __init__(self, name: str):
        super().__init__(f"unknown job {name!r}; known jobs: {', '.join(sorted(JOBS))}")


async def run_job(db: AsyncSession, name: str, now: datetime) -> str:
    """Run job `name` for `now` in the caller's transaction; the caller commits or rolls back."""
    job = JOBS.get(name)
    if job is None:
        raise UnknownJob(name)
    return await job(db, now)


async def run_in_transaction(name: str, now: datetime) -> str:
    """What a scheduled run does: one session, run job `name` for `now`, commit, or roll back
    and raise."""
    from myapp.db import SessionLocal

    async with SessionLocal() as db:
        try:
            did = await run_job(db, name, now)
            await db.commit()
            return did
        except Exception:
            await db.rollback()
            raise
