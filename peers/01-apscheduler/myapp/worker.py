"""The background loop every replica runs beside the API: APScheduler decides what is due."""

import asyncio
from datetime import datetime, timedelta

import time_machine

from myapp.scheduler import HostedScheduler, build

scheduler: HostedScheduler | None = None


asleep_until: datetime | None = None


async def tick(now: datetime) -> datetime | None:
    """Called by the host's loop every few minutes; the library sleeps until the wakeup it
    asked for, as its own timer would, and wakes at it (the lab calls then too)."""
    global asleep_until
    if asleep_until is None or now >= asleep_until:
        asleep_until = await _wake(now)
    return asleep_until


async def _wake(now: datetime) -> datetime | None:
    """One wakeup of the scheduler at `now`: APScheduler reads its job store, runs what is due
    and moves the job's next run time. Returns the time of the next wakeup it asks for."""
    global scheduler
    # APScheduler reads the clock itself (datetime.now); here that clock is `now`.
    with time_machine.travel(now, tick=False):
        if scheduler is None:
            scheduler = build()
            scheduler.start()  # adds the job (replace_existing) and runs the first wakeup
        else:
            scheduler.wakeup()
        running = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        await asyncio.gather(*running)  # the jobs the executor started on this loop
    wait = scheduler.next_wakeup_in
    return None if wait is None else now + timedelta(seconds=wait)


async def close() -> None:
    """Stop the scheduler and close its job store's engine when the process stops."""
    if scheduler is not None:
        scheduler.shutdown(wait=False)
