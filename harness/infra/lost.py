"""A service that stopped answering while a command ran: the one line that says so.

PostgreSQL shut down or Redis gone mid-run is the user's machine, not a bug of the lab's: the
CLI prints this line and exits 2 (with --json, as {"error": …}) instead of an internal error.
"""

from __future__ import annotations

import psycopg
import redis

from harness.infra.services import masked


def lost(e: BaseException) -> str | None:
    """The line for an error that says a service went away, else None."""
    if isinstance(e, (psycopg.OperationalError, psycopg.InterfaceError)):
        service = "PostgreSQL"
    elif isinstance(e, (redis.ConnectionError, redis.TimeoutError)):
        service = "Redis"
    else:
        return None
    first = next((line.strip() for line in str(e).splitlines() if line.strip()),
                 type(e).__name__)
    return (f"{service} stopped answering while the command ran ({masked(first)}); "
            "start it again and rerun (racelab clean removes what the run left)")
