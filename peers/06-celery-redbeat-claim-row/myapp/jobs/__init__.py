"""Every job the app runs on a schedule, by name. A job is `async def run(db, now) -> str`:
it works inside the caller's transaction, never commits, and says what it did."""

from collections.abc import Awaitable, Callable
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from myapp.jobs import leaderboard_close

Job = Callable[[AsyncSession, datetime], Awaitable[str]]

JOBS: dict[str, Job] = {
    "leaderboard_close": leaderboard_close.run,
}
