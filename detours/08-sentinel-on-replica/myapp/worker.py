"""The background loop every replica runs beside the API."""

import logging
import os
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import text

from myapp.db import SessionLocal
from myapp.leaderboard import CLOSE_AT, CLOSE_DAY, close_week
from myapp.maintenance import close_zombie_threads

log = logging.getLogger(__name__)

TZ = ZoneInfo(os.environ.get("APP_TIMEZONE", "America/Mexico_City"))
TICK_EVERY = timedelta(minutes=15)
WORKER_LOCK = 7_244_001  # one advisory-lock key shared by every replica's loop


def in_leaderboard_window(now: datetime) -> bool:
    return now.weekday() == CLOSE_DAY and now.hour == CLOSE_AT.hour and now.minute < 15


async def tick(now: datetime) -> None:
    """One pass of the loop: decide from the clock what is due, in one transaction."""
    async with SessionLocal() as db:
        try:
            # FIX: of the replicas ticking at the same instant, one takes the lock; the rest skip.
            got_lock = await db.scalar(
                text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": WORKER_LOCK}
            )
            if not got_lock:
                log.info("another replica holds the worker lock; skipping this tick")
                return
            if in_leaderboard_window(now):
                await close_week(db, now)
            await close_zombie_threads(db, now)
            await db.commit()
        except Exception:
            await db.rollback()
            raise


async def run_forever(
    clock: Callable[[], datetime], sleep: Callable[[float], Awaitable[None]]
) -> None:
    """Production entry point: `clock` and `sleep` come from the process that hosts the loop."""
    while True:
        try:
            await tick(clock().astimezone(TZ))
        except Exception:
            log.exception("worker tick failed")
        await sleep(TICK_EVERY.total_seconds())
