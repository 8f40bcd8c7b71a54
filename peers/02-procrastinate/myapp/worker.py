"""The background loop every replica runs beside the API: a procrastinate worker with its
periodic deferrer."""

from datetime import datetime, timedelta

from procrastinate.periodic import MARGIN, PeriodicDeferrer, PeriodicRegistry

from myapp.tasks import app

deferrer: PeriodicDeferrer | None = None
opened = False


asleep_until: datetime | None = None


async def tick(now: datetime) -> datetime | None:
    """Called by the host's loop every few minutes; the library sleeps until the wakeup it
    asked for, as its own timer would, and wakes at it (the lab calls then too)."""
    global asleep_until
    if asleep_until is None or now >= asleep_until:
        asleep_until = await _wake(now)
    return asleep_until


async def _wake(now: datetime) -> datetime:
    """One pass of the worker at `now`: the periodic deferrer defers what fell due by `now`
    (its own query: INSERT … ON CONFLICT DO NOTHING), then the worker fetches and runs jobs
    until the queue is empty. Returns when the deferrer asks to wake next."""
    global deferrer, opened
    if not opened:
        await app.open_async()
        opened = True
    if deferrer is None:  # one per process, as the worker's own: it remembers its last defers
        deferrer = PeriodicDeferrer(registry=app.periodic_registry, **app.periodic_defaults)
    at = now.timestamp()
    await deferrer.defer_jobs(jobs_to_defer=deferrer.get_previous_tasks(at=at))
    # The worker's own periodic deferrer would read the wall clock: this one has none to run.
    runner = app.with_connector(app.connector)
    runner.periodic_registry = PeriodicRegistry()
    await runner.run_worker_async(
        wait=False, listen_notify=False, install_signal_handlers=False, concurrency=1,
    )
    return now + timedelta(seconds=deferrer.get_next_tick(at=at) + MARGIN)


async def close() -> None:
    """Close procrastinate's connection pool when the process stops."""
    if opened:
        await app.close_async()
