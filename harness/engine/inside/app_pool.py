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
from collections.abc import Callable

import sqlalchemy.orm
from psycopg.pq import TransactionStatus
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
    is registered), the tick can never go on, and `stalled()` is told, once a wait."""

    def __init__(self, stalled: Callable[[], None]):
        super().__init__()
        self.stalled = stalled
        self.told = False

    def select(self, timeout=None):
        if not _pool_waits[0]:
            self.told = False
        elif timeout != 0 and len(self.get_map()) <= 1 and not self.told:
            self.told = True
            self.stalled()
        return super().select(timeout)


def loop(stalled: Callable[[], None]) -> asyncio.AbstractEventLoop:
    """A new event loop that calls `stalled()` when its tick can only wait for its own pool."""
    return asyncio.SelectorEventLoop(_Watched(stalled))


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


async def warm_up() -> int | None:
    """Open the stage's pool once, so first-connect queries never fall inside a tick. The
    socket of the connection it opened (None: the app has no engine of its own)."""
    engine = _engine()
    if engine is None:
        return None
    async with engine.connect() as c:
        await c.exec_driver_sql("SELECT 1")
        driver = (await c.get_raw_connection()).driver_connection
        pgconn = getattr(driver, "pgconn", None)
        return None if pgconn is None else pgconn.socket  # psycopg's, else not handed over


async def take_over(app_name: str) -> None:
    """In a zygote's child: the pooled connection the zygote opened becomes this replica's,
    named as the replica's own connection would be (application_name)."""
    async with _engine().connect() as c:
        driver = (await c.get_raw_connection()).driver_connection
        await driver.set_autocommit(True)
        await driver.execute("SELECT set_config('application_name', %s, false)", (app_name,))
        await driver.set_autocommit(False)


async def hand_back(socket: int) -> bool:
    """At a zygote's child's end: whether the pooled connection on `socket` is let go as a
    fresh session (idle, nothing of this replica's left in it: DISCARD ALL), for the zygote's
    next child. False, and nothing done, when it is not in the pool or not idle. (A session
    that defined a setting of its own is not offered: harness.engine.inside.seams,
    `defines_settings`.)"""
    engine = _engine()
    if engine is None:
        return False
    async with engine.connect() as c:
        driver = (await c.get_raw_connection()).driver_connection
        if driver.pgconn.socket != socket or driver.info.transaction_status != _IDLE:
            return False
        await driver.set_autocommit(True)
        await driver.execute("DISCARD ALL")
        await driver.set_autocommit(False)
    return True


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


HANDED_BACK = b"1"  # a child's word to its zygote: the connection is a fresh session again
HAND_BACK_WAIT_S = 5.0  # for the last child's word, at the next fork (it has ended by then)


class Handover:
    """A zygote's pooled connection, lent to each child in turn, so a schedule pays neither a
    connection nor a new server process per replica. A child that ends its ticks cleanly leaves
    the session as a new one would be (`hand_back`: DISCARD ALL), lets its copy go and says so
    on a pipe; a child killed, or that left the session otherwise, says nothing: the zygote then
    lets its own copy go (PostgreSQL ends the session once the child's is gone too, rolling back
    what it left open, as for any replica that dies) and connects anew. A session the server
    ended meanwhile (the rig ends a lost run's sessions) is seen on its socket: readable, with
    nothing asked. Only the zygote's process lends: its own copy is never used while lent."""

    def __init__(self, socket: int | None):
        self.socket = socket
        self.back: int | None = None  # the read end of the last child's pipe

    def lend(self) -> tuple[int, int] | None:
        """Before a fork: the socket the child takes over and the end of the pipe it says it
        handed it back on (None: nothing to lend, the child connects itself)."""
        if self.socket is None:
            return None
        if not self._handed_back():
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.socket)  # the pool's goodbye goes nowhere: the session is not ours
            os.close(null)
            _run(dispose_pool())
            self.socket = _run(warm_up())
            if self.socket is None:
                return None
        self.back, told = os.pipe()
        return self.socket, told

    def forked(self, lent: tuple[int, int] | None) -> None:
        """In the zygote, after the fork: the child's end of the pipe is the child's alone."""
        if lent is not None:
            os.close(lent[1])

    def _handed_back(self) -> bool:
        if self.back is None:  # the first child: the session is the one warm_up opened
            return True
        said = b""
        if select.select([self.back], [], [], HAND_BACK_WAIT_S)[0]:
            said = os.read(self.back, 1)
        os.close(self.back)
        self.back = None
        return said == HANDED_BACK and not select.select([self.socket], [], [], 0)[0]


def let_go(lent: tuple[int, int]) -> None:
    """In a child, after `hand_back`: its copy of the socket becomes /dev/null (the pool's
    goodbye on it goes nowhere), and it tells the zygote the session is free."""
    socket, told = lent
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, socket)
    os.close(null)
    with contextlib.suppress(OSError):  # the zygote stopped waiting: it connects anew
        os.write(told, HANDED_BACK)
    os.close(told)


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
