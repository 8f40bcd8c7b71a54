"""The background loop every replica runs beside the API: rq-scheduler and an RQ worker."""

import asyncio
from datetime import datetime

import time_machine
from rq_scheduler import Scheduler

from myapp import scheduler as rq_app
from myapp import tasks

scheduler: Scheduler | None = None

# Where a pass stands inside its lock (the due jobs read, not yet queued): the lab may hold a
# tick there as it holds the stages' ticks before COMMIT.
HOLD_POINTS = ("rq_scheduler.Scheduler.enqueue_job",)


def _pass() -> None:
    global scheduler
    if scheduler is None:
        scheduler = rq_app.build()
        scheduler.register_birth()
    rq_app.one_pass(scheduler)
    rq_app.work()


asleep_until: datetime | None = None


async def tick(now: datetime) -> datetime | None:
    """Called by the host's loop every few minutes; the library sleeps until the wakeup it
    asked for, as its own timer would, and wakes at it (the lab calls then too)."""
    global asleep_until
    if asleep_until is None or now >= asleep_until:
        asleep_until = await _wake(now)
    return asleep_until


async def _wake(now: datetime) -> datetime:
    """One pass of the scheduler at `now` (take the lock, move what is due to the queue, drop
    the lock), then the worker runs the queue empty. Returns the time of the scheduler's
    next pass that finds a job due."""
    tasks.app_loop = asyncio.get_running_loop()
    # rq-scheduler and RQ read the clock themselves (time.time, datetime.now): here it is `now`.
    with time_machine.travel(now, tick=False):
        await asyncio.to_thread(_pass)
    return rq_app.next_pass(now)


async def close() -> None:
    """Close the Redis connection pool when the process stops."""
    rq_app.redis.close()
