"""The app's RQ jobs. RQ calls them in its worker, in a thread beside the app's event loop."""

import asyncio
from datetime import datetime
from zoneinfo import ZoneInfo

from myapp.jobs.runner import run_in_transaction

TZ = ZoneInfo("America/Mexico_City")

# The event loop that owns the app's database pool; the replica's loop sets it.
app_loop: asyncio.AbstractEventLoop | None = None


def leaderboard_close() -> str:
    # An rq-scheduler job is not told its scheduled time: it reads the clock when it runs.
    now = datetime.now(TZ)
    assert app_loop is not None, "RQ jobs run only beside the app's event loop"
    return asyncio.run_coroutine_threadsafe(
        run_in_transaction("leaderboard_close", now), app_loop).result()
