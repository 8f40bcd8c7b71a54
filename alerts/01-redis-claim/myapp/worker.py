"""The background loop every replica runs beside the API."""

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from myapp.checks import check_low_credits, check_services, check_stuck_jobs
from myapp.reconcile import reconcile_if_due

log = logging.getLogger(__name__)

TZ = ZoneInfo("America/Mexico_City")
# The post gives no cadence: 30 minutes is our choice, the one the incident is told in. The
# reconciliation pass claims its own 2-minute windows (reconcile.py), the post's cadence for it.
TICK_EVERY = timedelta(minutes=30)


async def tick(now: datetime) -> None:
    """One pass of the loop: every check, then the reconciliation pass if its window is new."""
    await check_services(now)
    await check_stuck_jobs(now)
    await check_low_credits(now)
    await reconcile_if_due(now)


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
