"""The one path every caller runs a job through: the worker's tick, the CLI and the tests."""

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
