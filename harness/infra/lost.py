"""A service that stopped answering while a command ran: the one line that says so.

PostgreSQL shut down or Redis gone mid-run is the user's machine, not a bug of the lab's: the
CLI prints this line and exits 2 (with --json, as {"error": …}) instead of an internal error.
A replica that died first (its connection went before the harness's) counts when PostgreSQL
no longer answers now.
"""

from __future__ import annotations

import sys

import psycopg

from harness.infra import services


def lost(e: BaseException) -> str | None:
    """The line for an error that says a service went away, else None."""
    if isinstance(e, (psycopg.OperationalError, psycopg.InterfaceError)):
        return _line("PostgreSQL", e)
    redis = sys.modules.get("redis")  # not imported: no Redis error can have come
    if redis is not None and isinstance(e, (redis.ConnectionError, redis.TimeoutError)):
        return _line("Redis", e)
    if not services.postgres.cache_info().currsize:  # no run had found one yet
        return None
    try:
        psycopg.connect(services.libpq_url(services.postgres().url), connect_timeout=3).close()
    except psycopg.Error as gone:
        return _line("PostgreSQL", gone)
    return None


def _line(service: str, e: BaseException) -> str:
    first = next((line.strip() for line in str(e).splitlines() if line.strip()),
                 type(e).__name__)
    return (f"{service} stopped answering while the command ran ({services.masked(first)}); "
            "start it again and rerun (racelab clean removes what the run left)")
