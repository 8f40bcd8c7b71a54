"""Inside a project's processes (a replica, the child that reads its schema), before the
project is imported: a connection to another database than the run's (a URL of the job's own,
not the one its variable names) ends the command with one line. Its writes would be counted
nowhere, and could land in a database that matters; the check comes right after connecting,
before any statement."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from harness.engine.inside.messages import Refused
from harness.tracks.project.description import DB_ENV, TABLE


def _check(dbname: str | None) -> None:
    ours = urlsplit(os.environ["DATABASE_URL"]).path.lstrip("/")
    if dbname is not None and dbname != ours:
        raise Refused(f"[{TABLE}] database_env: the job connected to database {dbname!r}, not "
                      f"the run's; it must take its URL from {os.environ[DB_ENV]}")


def install() -> None:
    """SQLAlchemy's pools and psycopg's connect, sync and async, checked."""
    import psycopg
    from sqlalchemy import event
    from sqlalchemy.pool import Pool

    event.listen(Pool, "connect", lambda dbapi_connection, record: _check(
        getattr(getattr(dbapi_connection, "info", None), "dbname", None)))
    for cls in (psycopg.Connection, psycopg.AsyncConnection):
        connect = cls.connect.__func__
        if cls is psycopg.AsyncConnection:
            async def checked(klass, *args, _connect=connect, **kwargs):
                conn = await _connect(klass, *args, **kwargs)
                _check(conn.info.dbname)
                return conn
        else:
            def checked(klass, *args, _connect=connect, **kwargs):
                conn = _connect(klass, *args, **kwargs)
                _check(conn.info.dbname)
                return conn
        cls.connect = classmethod(checked)
    psycopg.connect = psycopg.Connection.connect  # the module's name for it, bound at import
