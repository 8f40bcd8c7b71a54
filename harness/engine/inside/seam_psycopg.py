"""The seams around psycopg 3 used directly, without SQLAlchemy (a project's job may open its
own connection with `psycopg.connect(os.environ[...])`): each statement a cursor or connection
executes, and each COMMIT or ROLLBACK, reach the same hooks as SQLAlchemy's events do
(harness.engine.inside.seams), so such a job is held before its COMMIT (`run`) and before each
statement (`step`, `explore`).

A connection SQLAlchemy's pool opened is left to SQLAlchemy's events: its statements reach
psycopg too, and would be seen twice. Seen here: `execute` and `executemany` of a cursor (a
connection's `execute` goes through one) and of a named (server-side) cursor, `commit` and
`rollback` (and so a connection's `with` block); not `with conn.transaction():`, whose COMMIT
psycopg sends by itself, nor `copy()`.
"""

from __future__ import annotations

import functools
import weakref
from types import SimpleNamespace

import psycopg
from psycopg import pq
from sqlalchemy import event
from sqlalchemy.pool import Pool

from harness.engine.inside.seams import Seams

_OPEN = (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR)


def install(seams: Seams) -> None:
    """Wrap psycopg's sync and asyncio cursors and connections for `seams`."""
    pooled: weakref.WeakSet = weakref.WeakSet()  # SQLAlchemy's: its own events see them

    @event.listens_for(Pool, "connect")
    def _pooled(dbapi_connection, record) -> None:
        pooled.add(getattr(dbapi_connection, "_connection", dbapi_connection))

    def watched(conn) -> bool:
        return seams.active and conn not in pooled

    def before(cursor, query, params, many: bool) -> str:
        conn = cursor.connection
        sql = query.as_string(conn) if hasattr(query, "as_string") else (
            query.decode() if isinstance(query, bytes) else str(query))
        if not conn.autocommit and conn.info.transaction_status == pq.TransactionStatus.IDLE:
            seams._on_begin(conn)  # psycopg opens a transaction with this statement
        seams._before_execute(conn, cursor, sql, params, None, many)
        return sql

    def after(cursor, sql: str, params, many: bool) -> None:
        seams._after_execute(cursor.connection, _Peek(cursor), sql, params, None, many)

    def failed(error: BaseException) -> None:
        seams._on_error(SimpleNamespace(original_exception=error))

    for cls, many in ((psycopg.Cursor, False), (psycopg.Cursor, True),
                      (psycopg.ServerCursor, False), (psycopg.ServerCursor, True)):
        name = "executemany" if many else "execute"
        original = getattr(cls, name)

        def sync_execute(self, query, params=None, *args, _original=original, _many=many,
                         **kwargs):
            if not watched(self.connection):
                return _original(self, query, params, *args, **kwargs)
            sql = seams.clock.timed(before)(self, query, params, _many)
            try:
                result = _original(self, query, params, *args, **kwargs)
            except BaseException as e:
                seams.clock.timed(failed)(e)
                raise
            seams.clock.timed(after)(self, sql, params, _many)
            return result

        setattr(cls, name, functools.wraps(original)(sync_execute))

    for cls, many in ((psycopg.AsyncCursor, False), (psycopg.AsyncCursor, True),
                      (psycopg.AsyncServerCursor, False), (psycopg.AsyncServerCursor, True)):
        name = "executemany" if many else "execute"
        original = getattr(cls, name)

        async def async_execute(self, query, params=None, *args, _original=original,
                                _many=many, **kwargs):
            if not watched(self.connection):
                return await _original(self, query, params, *args, **kwargs)
            sql = seams.clock.timed(before)(self, query, params, _many)
            try:
                result = await _original(self, query, params, *args, **kwargs)
            except BaseException as e:
                seams.clock.timed(failed)(e)
                raise
            seams.clock.timed(after)(self, sql, params, _many)
            return result

        setattr(cls, name, functools.wraps(original)(async_execute))

    for cls in (psycopg.Connection, psycopg.AsyncConnection):
        for how in ("commit", "rollback"):
            _wrap_ending(cls, how, seams, watched)


def _wrap_ending(cls, how: str, seams: Seams, watched) -> None:
    """COMMIT or ROLLBACK of an open transaction: the seams' hold and ops before it, and a
    COMMIT's completion once it went through."""
    original = getattr(cls, how)
    ending = seams._on_commit if how == "commit" else seams._on_rollback

    def starts(conn) -> bool:
        if not watched(conn) or conn.info.transaction_status not in _OPEN:
            return False
        seams.clock.timed(ending)(conn)
        return True

    if cls is psycopg.AsyncConnection:
        async def end(self):
            if not starts(self):
                return await original(self)
            await original(self)
            if how == "commit":
                seams.clock.timed(seams._committed)()
    else:
        def end(self):
            if not starts(self):
                return original(self)
            original(self)
            if how == "commit":
                seams.clock.timed(seams._committed)()

    setattr(cls, how, functools.wraps(original)(end))


class _Peek:
    """A psycopg cursor as the seams read it (`first_value`): its first row's first value,
    without fetching it, in psycopg's text form (t/f for a boolean)."""

    def __init__(self, cursor):
        result = cursor.pgresult
        self.rowcount = cursor.rowcount
        value = result.get_value(0, 0) if result is not None and result.ntuples else None
        self._rows = [({b"t": True, b"f": False}.get(value, value),)] if value is not None \
            else []
