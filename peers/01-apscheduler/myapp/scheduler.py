"""The app's APScheduler 3: one cron job in a job store that every replica shares.

Each replica builds the same scheduler at startup and adds the job with `replace_existing`, as
APScheduler's docs show for persistent job stores. The store is the app's own database.
"""

import os
from datetime import datetime
from zoneinfo import ZoneInfo

from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger

from myapp.jobs.runner import run_in_transaction

TZ = ZoneInfo("America/Mexico_City")
MISFIRE_GRACE = 15 * 60  # a wakeup up to 15 minutes late still runs the job (the default is 1 s)


async def leaderboard_close() -> str:
    # An APScheduler job is not told its scheduled time: it reads the clock when it runs.
    return await run_in_transaction("leaderboard_close", datetime.now(TZ))


class HostedScheduler(AsyncIOScheduler):
    """An AsyncIOScheduler whose wakeups come from the process that hosts it, not from a timer
    of its own: `wakeup()` runs the scheduler's own due-job pass at once and keeps the delay it
    asks for until the next one."""

    next_wakeup_in: float | None = None

    def wakeup(self) -> None:
        self.next_wakeup_in = self._process_jobs()

    def _start_timer(self, wait_seconds) -> None:
        self.next_wakeup_in = wait_seconds

    def _stop_timer(self) -> None:
        pass


def build() -> HostedScheduler:
    store = SQLAlchemyJobStore(
        url=os.environ["DATABASE_URL"],
        engine_options={"pool_size": 1, "max_overflow": 0},
    )
    scheduler = HostedScheduler(
        jobstores={"default": store},
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": MISFIRE_GRACE},
        timezone=TZ,
    )
    # ESCAPES: the store's due-job query takes no row lock: replicas that read it together all run.
    scheduler.add_job(
        leaderboard_close,
        CronTrigger(day_of_week="fri", hour=18, minute=0, timezone=TZ),
        id="leaderboard_close",
        replace_existing=True,
    )
    return scheduler
