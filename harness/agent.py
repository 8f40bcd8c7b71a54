"""The inside of a replica process: imports one stage's app and runs the ticks it is sent.

Runs in a child forked from the forkserver (heavy imports preloaded). It never decides
anything: the runner sends ("tick", …), ("release",) and ("stop",) over a pipe; the agent
answers ("ready", pid), ("held", how) and ("done", outcome, notes).
"""

from __future__ import annotations

import asyncio
import ctypes
import importlib
import os
import signal
import sys
from datetime import datetime
from multiprocessing.connection import Connection

# Preloaded in the forkserver so each replica starts in milliseconds.
import psycopg  # noqa: F401
import sqlalchemy.dialects.postgresql.psycopg  # noqa: F401
import sqlalchemy.ext.asyncio  # noqa: F401
import sqlalchemy.orm  # noqa: F401

from harness.seams import Seams

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent goes away (Linux)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def _enter_stage(stage_path: str, env: dict[str, str]) -> None:
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner stops us; Ctrl-C is its business
    os.environ.update(env)
    sys.path.insert(0, stage_path)


def serve(conn: Connection, stage_path: str, env: dict[str, str]) -> None:
    """Main loop of a replica process."""
    _enter_stage(stage_path, env)

    def hold(how: str) -> None:
        conn.send(("held", how))
        try:
            conn.recv()  # ("release",)
        except EOFError:
            os._exit(1)

    seams = Seams(hold)
    seams.install()
    worker = importlib.import_module("myapp.worker")
    loop = asyncio.new_event_loop()
    loop.run_until_complete(_warm_up())
    conn.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            break
        if msg[0] == "stop":
            break
        if msg[0] == "tick":
            spec = msg[1]
            seams.begin(hold=spec["hold"], crash=spec["crash"])
            outcome = "ok"
            try:
                loop.run_until_complete(worker.tick(datetime.fromisoformat(spec["now"])))
            except Exception as e:  # the stage's own error: a finding, reported, not fatal
                seams.note("error", f"{type(e).__name__}: {e}")
                outcome = "failed"
            conn.send(("done", outcome, seams.end()))
    loop.run_until_complete(_dispose())
    conn.close()


async def _warm_up() -> None:
    """Open the stage's pool once, so first-connect queries never fall inside a tick."""
    db = sys.modules.get("myapp.db") or _maybe_import("myapp.db")
    engine = getattr(db, "engine", None)
    if engine is not None:
        async with engine.connect() as c:
            await c.exec_driver_sql("SELECT 1")


async def _dispose() -> None:
    db = sys.modules.get("myapp.db")
    engine = getattr(db, "engine", None)
    if engine is not None:
        await engine.dispose()


def _maybe_import(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def schema_ddl(conn: Connection, stage_path: str) -> None:
    """Send back the CREATE statements of the stage's own models (run in a child process)."""
    _enter_stage(stage_path, {"DATABASE_URL": "postgresql+psycopg://unused/unused"})
    from sqlalchemy.dialects import postgresql
    from sqlalchemy.schema import CreateIndex, CreateTable

    models = importlib.import_module("myapp.models")
    dialect = postgresql.dialect()
    ddl = []
    for table in models.Base.metadata.sorted_tables:
        ddl.append(str(CreateTable(table).compile(dialect=dialect)))
        ddl += [str(CreateIndex(ix).compile(dialect=dialect)) for ix in table.indexes]
    conn.send(ddl)
    conn.close()
