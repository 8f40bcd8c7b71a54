"""Inside a replica of a project (the replica's `tick`, where a stage has myapp.worker's): the
user's job, called with the slot's time as the replica's clock reads it, in the project's zone.

The harness hands the description over in the replica's environment (description's *_ENV, set
by the track's world); the job's own database variable is pointed at the run's database before
the project is imported, so a module that reads it at import finds the run's.
"""

from __future__ import annotations

import importlib
import inspect
import os
from datetime import datetime
from urllib.parse import urlsplit, urlunsplit
from zoneinfo import ZoneInfo

import time_machine

from harness.tracks.project import guard
from harness.tracks.project.description import DB_ENV, DRIVER_ENV, JOB_ENV, ZONE_ENV


def _point_database() -> None:
    """The run's URL (DATABASE_URL, SQLAlchemy's psycopg form) in the variable and form the
    project reads."""
    url = urlsplit(os.environ["DATABASE_URL"])
    os.environ[os.environ[DB_ENV]] = urlunsplit(url._replace(scheme=os.environ[DRIVER_ENV]))


def _job():
    module, _, name = os.environ[JOB_ENV].partition(":")
    return getattr(importlib.import_module(module), name)


_point_database()
guard.install()
job = _job()
zone = ZoneInfo(os.environ[ZONE_ENV])


async def tick(now: datetime) -> None:
    """One slot as this replica's scheduler fires it (the variable pointed again: a replica
    forked from a zygote had the harness's environment put back). The job's own clock reads
    (`datetime.now()`, `time.time()`) start at `now` and run on from there."""
    _point_database()
    local = now.astimezone(zone)
    with time_machine.travel(local, tick=True):
        done = job(local)
        if inspect.isawaitable(done):
            await done
