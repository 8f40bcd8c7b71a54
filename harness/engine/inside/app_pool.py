"""The stage app's pool and ORM in a lab process: opened once before the first tick, closed
at the end, and for a zygote (harness.engine.run.zygote) made ready for its forks; and the
process's event loop, which tells when a tick can only wait for a connection of its own pool."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import selectors
import sys
from collections.abc import Callable

import sqlalchemy.orm
from sqlalchemy.pool import QueuePool

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


async def warm_up() -> None:
    """Open the stage's pool once, so first-connect queries never fall inside a tick."""
    db = sys.modules.get("myapp.db") or _maybe_import("myapp.db")
    engine = getattr(db, "engine", None)
    if engine is not None:
        async with engine.connect() as c:
            await c.exec_driver_sql("SELECT 1")


async def dispose_pool() -> None:
    """Close the pool's connections, the engine kept: a fork then opens its own."""
    engine = getattr(sys.modules.get("myapp.db"), "engine", None)
    if engine is not None:
        await engine.dispose()


async def dispose() -> None:
    close = getattr(sys.modules.get("myapp.worker"), "close", None)
    if close is not None:  # what the app's background loop opened beside its pool
        await close()
    db = sys.modules.get("myapp.db")
    engine = getattr(db, "engine", None)
    if engine is not None:
        await engine.dispose()


def _maybe_import(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
