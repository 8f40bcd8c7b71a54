"""The app's procrastinate tasks: the Friday close as a periodic task in the app's database.

Every replica runs a worker with the periodic deferrer. Each deferrer inserts a
(task, periodic id, scheduled timestamp) row with ON CONFLICT DO NOTHING: the first insert
defers the job, the others find the row. Workers fetch jobs with FOR UPDATE SKIP LOCKED.
"""

import os
from datetime import datetime
from zoneinfo import ZoneInfo

import procrastinate

from myapp.jobs.runner import run_in_transaction

TZ = ZoneInfo("America/Mexico_City")
CONNINFO = os.environ["DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://", 1)

app = procrastinate.App(
    connector=procrastinate.PsycopgConnector(conninfo=CONNINFO, min_size=1, max_size=1),
)


# Saturday 00:00 UTC is Friday 18:00 in Mexico City (UTC-6 all year since 2022); procrastinate's
# cron is read in UTC.
@app.periodic(cron="0 0 * * 6", periodic_id="friday-close")
@app.task(name="leaderboard_close")
async def leaderboard_close(timestamp: int) -> str:
    # FIX: the library hands the job its scheduled time; the slot comes from it, not the clock.
    return await run_in_transaction("leaderboard_close", datetime.fromtimestamp(timestamp, TZ))
