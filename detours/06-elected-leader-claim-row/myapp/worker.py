"""The background loop every replica runs beside the API."""

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from myapp.db import SessionLocal
from myapp.leader import heartbeat
from myapp.leaderboard import close_week, slot_for, week_key
from myapp.maintenance import close_zombie_threads

log = logging.getLogger(__name__)

TZ = ZoneInfo("America/Mexico_City")
TICK_EVERY = timedelta(minutes=15)
HEARTBEAT = timedelta(seconds=20)  # the loop wakes this often to keep the lease
LEADERSHIP = "worker"

_leading = False
_ran: set[str] = set()  # the slots this process ran as leader


def in_leaderboard_window(now: datetime) -> bool:
    return now.weekday() == 4 and now.hour == 18 and now.minute < 15


async def tick(now: datetime) -> datetime:
    """One pass of the loop: keep the lease; as leader, run what is due in one transaction.
    Returns when the loop wants to wake next (its heartbeat)."""
    global _leading
    until = await heartbeat(LEADERSHIP, now)
    if (until is not None) != _leading:
        _leading = until is not None
        if _leading:
            log.info("elected leader, the lease held until %s", f"{until.astimezone(TZ):%H:%M:%S}")
        else:
            log.info("lost the lease")
    # FIX: only the replica holding the lease runs the scheduled work.
    if not _leading:
        return now + HEARTBEAT
    async with SessionLocal() as db:
        try:
            key = week_key(slot_for(now))
            ran = False
            if in_leaderboard_window(now) and key not in _ran:
                # ESCAPES: each replica still decides from its own clock when the job is due.
                await close_week(db, now)
                ran = True
            await close_zombie_threads(db, now)
            await db.commit()
            if ran:
                _ran.add(key)
        except Exception:
            await db.rollback()
            raise
    return now + HEARTBEAT


async def run_forever(
    clock: Callable[[], datetime], sleep: Callable[[float], Awaitable[None]]
) -> None:
    """Production entry point: `clock` and `sleep` come from the process that hosts the loop."""
    while True:
        try:
            asked = await tick(clock().astimezone(TZ))
            wait = (asked - clock()).total_seconds()
        except Exception:
            log.exception("worker tick failed")
            wait = HEARTBEAT.total_seconds()
        await sleep(max(0.0, min(wait, TICK_EVERY.total_seconds())))
