"""The stage app's pool and ORM in a lab process: opened once before the first tick, closed
at the end, and for a zygote (harness.engine.run.zygote) made ready for its forks; and the
process's event loop, which tells when a tick can only wait for a connection of its own pool."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import select
import selectors
import sys
import threading
from collections.abc import Callable

import psycopg
import sqlalchemy.orm
from psycopg.pq import ConnStatus, ExecStatus, TransactionStatus
from sqlalchemy.pool import QueuePool

_IDLE = TransactionStatus.IDLE
_pool_waits = [0]  # checkouts waiting now for a connection to come back to their pool


def watch_pool_waits() -> None:
    """Count the checkouts that wait for a pooled connection to come back (every connection
    taken, no overflow left); `loop` tells when such a wait can never end."""
    original = QueuePool._do_get

    def _do_get(pool: QueuePool):
        if pool._max_overflow > -1 and pool._overflow >= pool._max_overflow and pool._pool.empty():
            _pool_waits[0] += 1
            try:
                return original(pool)
            finally:
                _pool_waits[0] -= 1
        return original(pool)

    QueuePool._do_get = _do_get


class _Watched(selectors.DefaultSelector):
    """The loop's selector: about to block while a checkout waits for its pool and nothing
    else is awaited (no statement's answer, no other socket: only the loop's own wake-up pipe
    is registered; no timer but the pool waits' own timeouts: a coroutine asleep may still let
    a connection go; no thread but this one: one may finish a coroutine's work, as
    asyncio.to_thread does), the tick can never go on, and `stalled()` is told, once a wait.
    Where any of those is there, the 20 s limit of a step stays the judge."""

    def __init__(self, stalled: Callable[[], None]):
        super().__init__()
        self.stalled = stalled
        self.told = False
        self.timers: Callable[[], int] = lambda: 0  # the loop's timers, cancelled ones too

    def select(self, timeout=None):
        if not _pool_waits[0]:
            self.told = False
        elif (timeout != 0 and len(self.get_map()) <= 1 and self.timers() <= _pool_waits[0]
              and threading.active_count() == 1 and not self.told):
            self.told = True
            self.stalled()
        return super().select(timeout)


def loop(stalled: Callable[[], None]) -> asyncio.AbstractEventLoop:
    """A new event loop that calls `stalled()` when its tick can only wait for its own pool."""
    selector = _Watched(stalled)
    new = asyncio.SelectorEventLoop(selector)
    selector.timers = lambda: len(new._scheduled)  # a cancelled timer counts: never too soon
    return new


def configure_mappers() -> None:
    """Configure the app's ORM mappers, as its first query would, so no child pays for it
    (~3 ms of CPU each); only where that succeeds, tried first in a throwaway fork: an error
    in them stays the first tick's own, as in a fresh replica."""
    if (pid := os.fork()) == 0:
        with contextlib.suppress(BaseException):
            sqlalchemy.orm.configure_mappers()
            os._exit(0)
        os._exit(1)
    if os.waitpid(pid, 0)[1] == 0:
        sqlalchemy.orm.configure_mappers()


async def warm_up():
    """Open the stage's pool once, so first-connect queries never fall inside a tick. The
    driver's connection it opened, if psycopg's (None: the app has no engine of its own, or
    another driver)."""
    engine = _engine()
    if engine is None:
        return None
    async with engine.connect() as c:
        await c.exec_driver_sql("SELECT 1")
        driver = (await c.get_raw_connection()).driver_connection
    return driver if _lendable(engine, driver) else None


def _lendable(engine, driver) -> bool:
    """Whether a zygote may lend this connection to child after child: psycopg's, in the
    clear (a TLS or GSS stream's state is the process's that used it last), preparing nothing
    on first use (the zygote's record of what is prepared would outlive DISCARD ALL), and no
    listener of the app's own on the pool's new connections (what it sets per connection,
    DISCARD ALL would undo for every child after the first)."""
    pgconn = getattr(driver, "pgconn", None)
    if pgconn is None or pgconn.ssl_in_use or getattr(driver.info, "gssenc_in_use", False):
        return False
    if driver.prepare_threshold is not None and driver.prepare_threshold < 1:
        return False
    pool = engine.sync_engine.pool
    listeners = [*pool.dispatch.connect, *pool.dispatch.first_connect]
    return all(getattr(fn, "__module__", "").startswith("sqlalchemy") for fn in listeners)


async def dispose_pool() -> None:
    """Close the pool's connections, the engine kept: a fork then opens its own."""
    engine = _engine()
    if engine is not None:
        await engine.dispose()


async def close_app() -> None:
    """What the app's background loop opened beside its pool, closed."""
    close = getattr(sys.modules.get("myapp.worker"), "close", None)
    if close is not None:
        await close()


HANDED_BACK = b"1"  # a child's word to its zygote: it let the session go, idle
HAND_BACK_WAIT_S = 5.0  # for the last child's word, at the next fork (it has ended by then)


class Handover:
    """A zygote's pooled connection, lent to each child in turn, so a schedule pays neither a
    connection nor a new server process per replica. Before each fork the zygote makes the
    session what a new one would be (DISCARD ALL, after a child used it) and names it as the
    child's own connection would be named (application_name); the child inherits it in its
    pool. A child that ends its ticks with the session idle, and defined no setting of its own
    in it (which DISCARD ALL would keep defined), lets its copy go and says so on a pipe
    (`let_go`). A child killed, or that left the session otherwise, says nothing: the zygote
    then lets its own copy go (PostgreSQL ends the session once the child's is gone too,
    rolling back what it left open, as for any replica that dies) and connects anew. A session
    the server ended meanwhile (the rig ends a lost run's sessions) is seen on its socket:
    readable, with nothing asked. The zygote uses its copy only while no child holds one."""

    def __init__(self, driver):
        self.driver = driver  # psycopg's AsyncConnection, or None: nothing to lend
        self.back: int | None = None  # the read end of the last child's pipe
        self.used = False  # a child has had the session since DISCARD ALL

    def lend(self, app_name: str) -> tuple[int, int] | None:
        """Before a fork: the socket the child takes over, named `app_name`, and the end of the
        pipe it lets it go on (None: nothing to lend, the child connects itself)."""
        if self.driver is None:
            return None
        if not self._handed_back() or not self._renew(app_name):
            if self.driver.pgconn.status == ConnStatus.OK:  # else libpq closed its socket
                _to_nowhere(self.driver.pgconn.socket)  # its goodbye goes nowhere: not ours
            _run(dispose_pool())
            self.driver, self.used = _run(warm_up()), False
            if self.driver is None or not self._renew(app_name):
                self.driver = None  # no more lending: each child connects itself
                _run(dispose_pool())
                return None
        self.back, told = os.pipe()
        self.used = True
        return self.driver.pgconn.socket, told

    def _renew(self, app_name: str) -> bool:
        """The session reset (after a child had it) and named, straight through libpq: two
        round trips, no event loop (the session is idle: psycopg has nothing in flight)."""
        pgconn = self.driver.pgconn
        try:
            if self.used and pgconn.exec_(b"DISCARD ALL").status != ExecStatus.COMMAND_OK:
                return False
            named = pgconn.exec_params(b"SELECT set_config('application_name', $1, false)",
                                       [app_name.encode()])
        except psycopg.Error:  # the server ended the session meanwhile
            return False
        return named.status == ExecStatus.TUPLES_OK

    def forked(self, lent: tuple[int, int] | None) -> None:
        """In the zygote, after the fork: the child's end of the pipe is the child's alone."""
        if lent is not None:
            os.close(lent[1])

    def let_go(self, lent: tuple[int, int], defined_settings: bool) -> bool:
        """In the child, at its end: whether it let the session go back to the zygote (idle,
        nothing of its own defined). Its copy of the socket then becomes /dev/null, so nothing
        it closes on the way out reaches the server."""
        socket, told = lent
        if (defined_settings or self.driver.closed or self.driver.pgconn.socket != socket
                or self.driver.info.transaction_status != _IDLE):
            return False
        _to_nowhere(socket)
        with contextlib.suppress(OSError):  # the zygote stopped waiting: it connects anew
            os.write(told, HANDED_BACK)
        os.close(told)
        return True

    def _handed_back(self) -> bool:
        if self.back is None:  # the first child: the session is the one warm_up opened
            return True
        said = b""
        if select.select([self.back], [], [], HAND_BACK_WAIT_S)[0]:
            said = os.read(self.back, 1)
        os.close(self.back)
        self.back = None
        return (said == HANDED_BACK and self.driver.pgconn.status == ConnStatus.OK
                and not select.select([self.driver.pgconn.socket], [], [], 0)[0])


def _to_nowhere(fd: int) -> None:
    """This process's copy of a shared socket becomes /dev/null: what this process writes or
    closes on it no longer reaches the server; the session stays the other copy's."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)


def _run(coroutine):
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def _engine():
    db = sys.modules.get("myapp.db") or _maybe_import("myapp.db")
    return getattr(db, "engine", None)


def _maybe_import(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def run_database_only(handler: Callable) -> Callable:
    """`handler(conn)` for a SQLAlchemy connection to the run's database (DATABASE_URL's server
    and database) only: a transaction on a read replica the app also reads (a standby) is not
    what the run shares, and neither begins, holds nor ends the tick's transaction; its
    statements are still seen."""
    from sqlalchemy.engine import make_url

    parsed: dict[str, tuple] = {}  # DATABASE_URL (a fork's may differ) -> (host, port, db)

    def filtered(conn) -> None:
        said = os.environ.get("DATABASE_URL")
        if said is not None and said not in parsed:
            run = make_url(said)
            parsed[said] = (run.host, run.port, run.database)
        url = conn.engine.url
        if said is None or (url.host, url.port, url.database) == parsed[said]:
            handler(conn)

    return filtered
