"""The app's Celery tasks. The worker runs them in its thread, beside the app's event loop."""

import asyncio
import logging
from datetime import datetime
from zoneinfo import ZoneInfo

from myapp.jobs.runner import run_in_transaction
from myapp.scheduler import app

TZ = ZoneInfo("America/Mexico_City")
log = logging.getLogger(__name__)

# The event loop that owns the app's database pool; the replica's loop sets it.
app_loop: asyncio.AbstractEventLoop | None = None


@app.task(name="myapp.tasks.leaderboard_close", bind=True)
def leaderboard_close(self) -> str:
    if (self.request.delivery_info or {}).get("redelivered"):
        log.info("leaderboard_close: this message was delivered before and not acknowledged")
    # A task beat sends is not told its scheduled time: it reads the clock when it runs.
    now = datetime.now(TZ)
    assert app_loop is not None, "Celery tasks run only beside the app's event loop"
    return asyncio.run_coroutine_threadsafe(
        run_in_transaction("leaderboard_close", now), app_loop).result()
