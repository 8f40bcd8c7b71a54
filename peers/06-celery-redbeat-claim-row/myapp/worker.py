"""The background loop every replica runs beside the API: Celery beat with RedBeat, and a
Celery worker."""

import asyncio
import math
from datetime import UTC, datetime, timedelta

import time_machine
from celery import signals

from myapp import scheduler as celery_app
from myapp import tasks

service: celery_app.HostedBeat | None = None

# Where the lock's holder stands inside its tick (the lock extended, the due entries read, not
# yet decided on): the lab may hold a tick there as it holds the stages' ticks before COMMIT.
HOLD_POINTS = ("redbeat.schedulers.RedBeatScheduler.maybe_due",)
sent = 0  # task messages this process published (beat's sends)


@signals.after_task_publish.connect
def _count(**_) -> None:
    global sent
    sent += 1


asleep_until: datetime | None = None


async def tick(now: datetime) -> datetime | None:
    """Called by the host's loop every few minutes; the library sleeps until the wakeup it
    asked for, as its own timer would, and wakes at it (the lab calls then too)."""
    global asleep_until
    if asleep_until is None or now >= asleep_until:
        asleep_until = await _wake(now)
    else:  # beat sleeps; the worker beside it still runs what the broker holds for it
        with time_machine.travel(now, tick=False):
            await asyncio.to_thread(celery_app.work, 0)
    return asleep_until


async def _wake(now: datetime) -> datetime:
    """One turn of beat's loop at `now` (try the lock until beat holds it; then tick, which
    extends the lock and sends what is due), then a worker runs what the broker holds.
    Returns the time of the next wakeup beat asks for."""
    global service
    tasks.app_loop = asyncio.get_running_loop()
    before = sent
    # beat, the worker and the task read the clock themselves (datetime.now): here it is `now`.
    with time_machine.travel(now, tick=False) as clock:
        if service is None:
            service = celery_app.build()
        # A beat that does not hold the lock is still in beat_init, waiting for it.
        sleep = None if service.started else service.boot()
        if sleep is None:
            sleep = service.wake(clock)
        await asyncio.to_thread(celery_app.work, sent - before)
        woke = datetime.now(UTC)
    # beat asks to wake 10 ms before a due time (Scheduler.adjust) and then ticks on without
    # sleeping until it is due: waking it on the whole second is where that spin ends.
    wakeup = woke + timedelta(seconds=sleep)
    return datetime.fromtimestamp(math.ceil(wakeup.timestamp()), now.tzinfo)


async def close() -> None:
    """Stop beat as its service does (sync and close the schedule) when the process stops."""
    if service is not None:
        service.sync()
    celery_app.broker.close()
