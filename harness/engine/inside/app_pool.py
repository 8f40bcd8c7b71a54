"""The stage app's pool and ORM in a lab process: opened once before the first tick, closed
at the end, and for a zygote (harness.engine.run.zygote) made ready for its forks."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys

import sqlalchemy.orm


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
