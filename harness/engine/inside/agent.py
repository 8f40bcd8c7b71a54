"""The inside of a lab process: a replica running one stage's ticks, or a task running one
job command (stage 05's scheduler), or a throwaway child reading a stage's schema.

Runs in a child forked from the forkserver (heavy imports preloaded). It never decides
anything: the runner sends Tick, Release and Stop over a pipe; the agent answers Ready, Held
and Done (harness.engine.inside.messages), whose ops are the steps the seams recorded since the last
answer, in the order they ran (harness.engine.model.history).
A task answers the same way for its single run.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import importlib
import inspect
import io
import os
import runpy
import signal
import socket
import sys
import time
from collections.abc import Callable
from datetime import datetime
from multiprocessing import reduction
from multiprocessing.connection import Connection

# Preloaded in the forkserver so each replica starts in milliseconds.
import psycopg  # noqa: F401
import sqlalchemy.dialects.postgresql.psycopg  # noqa: F401
import sqlalchemy.ext.asyncio  # noqa: F401
import sqlalchemy.orm  # noqa: F401

from harness.engine.inside import app_pool, seam_psycopg, told
from harness.engine.inside.access import EVERYTHING, Access
from harness.engine.inside.messages import (
    Broken,
    Done,
    Fork,
    Held,
    Ready,
    Refused,
    Stalled,
    Stop,
    Tick,
)
from harness.engine.inside.seams import Seams
from harness.engine.model.history import F, Type
from harness.engine.model.tracks import SeamRules
from harness.engine.model.world import WORKER_ENV
from harness.infra.procs import die_with_parent


def _quiet(main: Callable) -> Callable:
    """A lab process's main, ending without a traceback whatever happens: an error in the
    stage's own files (an attendee's syntax error) is sent to the harness as one line,
    Broken("FILE:LINE: message"); anything else ends the process, and the harness, which
    sees the pipe close, says what it means."""

    @functools.wraps(main)
    def run(conn: Connection, stage_path: str, *args) -> None:
        try:
            main(conn, stage_path, *args)
        except BaseException as e:  # noqa: BLE001 - a child never prints a traceback
            _broken(e, conn, stage_path)

    return run


def _broken(e: BaseException, conn: Connection, stage_path: str) -> None:
    """End the process; an error in the stage's own files told to the harness first."""
    if line := e.line if isinstance(e, Refused) else told.stage_error(e, stage_path):
        with contextlib.suppress(OSError, ValueError):
            conn.send(Broken(line))
    os._exit(1)


def _enter_stage(stage_path: str, env: dict[str, str]) -> None:
    die_with_parent()  # this process dies with its parent, on any OS
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner stops us; Ctrl-C is its business
    os.environ.update(env)
    # A lab process writes no bytecode of the stage: a copy rewritten within the second of its
    # last run (an exercise checked, fixed and checked again) has the same mtime and size, and
    # bytecode cached from it would run the old code.
    sys.dont_write_bytecode = True
    sys.path.insert(0, stage_path)


class _Line:
    """The pipe to the harness as the holds and the main loop share it (a zygote's child puts
    its own pipe here). `stopping`: a Stop came instead of a release; the hold lets go, the tick
    runs to its end (no later hold waits), and then the process ends, as at a Stop between
    ticks, rather than wait for a message that will not come."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self.stopping = False
        self.unsent: list[tuple] = []  # ops of holds that did not wait (stopping): for Done

    def take_unsent(self) -> list[tuple]:
        ops, self.unsent = self.unsent, []
        return ops


def _holder(line: _Line) -> Callable[..., None]:
    """What a seam calls to hold a transaction (or, in step mode, a statement): tell the runner
    (with the ops so far and the statement next), wait for its release."""

    released = [time.monotonic_ns()]

    def hold(how: str, ops: list[tuple], next_sql: str, frees: bool = False,
             access: Access = EVERYTHING, seam_ns: int = 0) -> None:
        if line.stopping:
            line.unsent += ops
            return
        conn = line.conn
        conn.send(Held(how, ops, next_sql, frees, time.monotonic_ns() - released[0], seam_ns,
                       access))
        try:
            line.stopping = isinstance(conn.recv(), Stop)  # else Release()
        except EOFError:
            os._exit(1)
        released[0] = time.monotonic_ns()

    return hold


def _prepare(line: _Line, stage_path: str, env: dict[str, str], rules: SeamRules):
    """The stage imported under the seams: (seams, myapp.worker)."""
    _enter_stage(stage_path, env)
    seams = Seams(_holder(line), rules)
    seams.install()
    if rules.direct_psycopg:
        seam_psycopg.install(seams)
    app_pool.watch_pool_waits()
    if rules.hooks:  # before the app imports what they wrap
        importlib.import_module(rules.hooks).install(seams)
    worker = importlib.import_module(os.environ.get(WORKER_ENV, "myapp.worker"))
    for point in getattr(worker, "HOLD_POINTS", ()):  # a library's critical section
        seams.hold_before(point)
    return seams, worker


@_quiet
def serve(conn: Connection, stage_path: str, env: dict[str, str], rules: SeamRules) -> None:
    """Main loop of a replica process."""
    line = _Line(conn)
    seams, worker = _prepare(line, stage_path, env, rules)
    _serve(line, seams, worker)


def _messages(conn: Connection):
    """What the harness sends, until it closes its end (or goes)."""
    while True:
        try:
            yield conn.recv()
        except (EOFError, OSError):
            return


def _stalled(line: _Line, seams: Seams) -> None:
    """In step mode, tell the harness the tick can only wait for its own pool (it ends the
    process: nothing else will)."""
    if seams.stepping and seams.active and not line.stopping:
        line.conn.send(Stalled())


def _serve(line: _Line, seams: Seams, worker, handover: app_pool.Handover | None = None,
           lent: tuple[int, int] | None = None) -> None:
    """A replica from its first connection on: Ready, then ticks until Stop. `lent`: the
    zygote's pooled connection this replica has from `handover`, its pool's already."""
    conn = line.conn
    loop = app_pool.loop(functools.partial(_stalled, line, seams))
    if lent is None:
        loop.run_until_complete(app_pool.warm_up())
    conn.send(Ready(os.getpid()))
    for msg in _messages(conn):
        if isinstance(msg, Stop):
            break
        if isinstance(msg, Tick):
            seams.begin(hold=msg.hold, crash=msg.crash, step=msg.step, at=msg.at,
                        access=msg.access)
            outcome = "ok"
            try:
                with told.exit_told(conn):
                    asked = loop.run_until_complete(worker.tick(datetime.fromisoformat(msg.now)))
                if isinstance(asked, datetime):  # a scheduler library's own next wakeup
                    seams.note("wakeup", asked.isoformat())
                    seams.op(Type.INFO, F.WAKEUP, {"at": asked.isoformat()})
            except Exception as e:  # the stage's own error: a finding, reported, not fatal
                lost = told.connection_lost(e)
                server = told.server_error(e)
                seams.failed(f"{type(e).__name__}: {told.first_line(e)}", type(e).__name__,
                             unknown=lost, sqlstate=getattr(server, "sqlstate", None),
                             message=told.first_line(server) if server is not None else "",
                             where=told.app_line(e))
                outcome = "unknown" if lost else "failed"
            conn.send(Done(outcome, seams.end(), line.take_unsent() + seams.take_ops()))
            if line.stopping:
                break
    loop.run_until_complete(app_pool.close_app())
    if lent is not None and handover.let_go(lent, seams.defines_settings):
        conn.close()
        return  # the process ends now: what else it opened, the exit closes
    loop.run_until_complete(app_pool.dispose_pool())
    conn.close()


@_quiet
def zygote(conn: Connection, stage_path: str, env: dict[str, str], rules: SeamRules,
           lend: bool = True) -> None:
    """A replica stopped before its first tick, kept to be forked (harness.engine.run.zygote):
    the stage imported and its pool's first connection open (the dialect learnt), lent to each
    child in turn as a fresh session (app_pool.Handover), so each child starts as a fresh
    replica would, at the cost of a fork; without `lend`, closed once the dialect is learnt, and
    each child connects itself. Answers Ready, then each Fork(env) with the child's pid and its
    end of a new pipe (passed as a file descriptor); ends at Stop or when the harness goes."""
    line = _Line(conn)
    seams, worker = _prepare(line, stage_path, {**env, "PGAPPNAME": "racelab:zygote"}, rules)
    loop = asyncio.new_event_loop()
    driver = loop.run_until_complete(app_pool.warm_up())
    handover = app_pool.Handover(driver if lend else None)
    if handover.driver is None:  # nothing to lend: each child opens its own, as before
        loop.run_until_complete(app_pool.dispose_pool())
    loop.close()
    app_pool.configure_mappers()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reaped as they end: no zombies
    gc.collect()
    gc.freeze()  # what is here now stays shared with the children: fewer pages copied
    conn.send(Ready(os.getpid()))
    for msg in _messages(conn):
        if not isinstance(msg, Fork):
            break
        lent = handover.lend(msg.env["PGAPPNAME"])
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:  # the child: a replica from its first connection on
            ours.close()
            conn.close()
            if handover.back is not None:
                os.close(handover.back)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the zygote's own, not a replica's
            die_with_parent()
            os.environ.update(msg.env)
            child = Connection(theirs.detach())
            line.conn = child
            try:
                _serve(line, seams, worker, handover, lent)
            except BaseException as e:  # noqa: BLE001 - as a replica's main would
                _broken(e, child, stage_path)
            os._exit(0)
        handover.forked(lent)
        theirs.close()
        conn.send(pid)
        reduction.send_handle(conn, ours.fileno(), os.getpid())
        ours.close()
    conn.close()


@_quiet
def run_task(conn: Connection, stage_path: str, env: dict[str, str], rules: SeamRules,
             command: tuple[str, ...]) -> None:
    """Main of a task process: run one job command (`python -m MODULE ARGS…`) once, as its
    container would, under the same seams as a tick; the exit code decides the outcome.

    Answers Ready, waits for a Tick (hold, crash), then Done: the command's output and exit
    code are notes like the seams' own."""
    _enter_stage(stage_path, env)
    seams = Seams(_holder(_Line(conn)), rules)
    seams.install()
    conn.send(Ready(os.getpid()))
    try:
        msg = conn.recv()
    except (EOFError, OSError):
        return
    if not isinstance(msg, Tick):
        return
    seams.begin(hold=msg.hold, crash=msg.crash, step=msg.step, at=msg.at,
                access=msg.access)
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = _run_module(command)
    for line in output.getvalue().splitlines():
        seams.note("output", line)
    seams.note("exit", str(code))
    conn.send(Done("ok" if code == 0 else "failed", seams.end(), seams.take_ops()))
    conn.close()


def _run_module(command: tuple[str, ...]) -> int:
    """What `python -m MODULE ARGS…` would do in this process; its exit code."""
    if len(command) < 3 or command[1] != "-m":
        raise ValueError(f"a task runs `python -m MODULE …`, not {' '.join(command)!r}")
    sys.argv = [command[0], *command[3:]]
    try:
        runpy.run_module(command[2], run_name="__main__", alter_sys=True)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


STAGE_SCHEMA = "myapp.models:Base"  # a stage folder's models


@_quiet
def schema_ddl(conn: Connection, stage_path: str, models: str = STAGE_SCHEMA,
               env: dict[str, str] | None = None,
               callables: tuple[tuple[str, str], ...] = (), models_key: str = "",
               guard: str = "") -> None:
    """Send back the CREATE statements of the app's own models, `models` a SQLAlchemy Base or
    MetaData as module:name (run in a child process, the app's modules imported with `env`);
    each of `callables`, (what names it, module:function), is first checked to be a function
    of one argument: Broken("NAME: why") when not, as when `models` (named `models_key`) is no
    Base or MetaData. `guard`: a module whose install() runs before the app is imported (a
    project's: a connection the app opens at import is refused, harness.tracks.project.guard)."""
    _enter_stage(stage_path, env or {"DATABASE_URL": "postgresql+psycopg://unused/unused"})
    if guard:
        importlib.import_module(guard).install()
    for key, spec in callables:
        if why := _not_callable_with_one(spec):
            conn.send(Broken(f"{key}: {why}"))
            return
    if not models:  # the app's schema is SQL of its own: the checks were all it asked
        conn.send([])
        conn.close()
        return
    from sqlalchemy.dialects import postgresql
    from sqlalchemy.schema import CreateIndex, CreateTable

    module_name, _, name = models.partition(":")
    module = importlib.import_module(module_name)
    found = getattr(module, name, None)
    metadata = getattr(found, "metadata", found)
    if not hasattr(metadata, "sorted_tables"):
        what = (f"{module_name!r} has no {name!r}" if found is None else
                f"{models} is a {type(found).__name__}")
        conn.send(Broken(f"{models_key or models}: {what}, not a SQLAlchemy Base or MetaData"))
        return
    dialect = postgresql.dialect()
    ddl = []
    for table in metadata.sorted_tables:
        ddl.append(str(CreateTable(table).compile(dialect=dialect)))
        ddl += [str(CreateIndex(ix).compile(dialect=dialect)) for ix in table.indexes]
    ddl += getattr(module, "LIBRARY_DDL", [])  # a library's own schema, beside the models
    conn.send(ddl)
    conn.close()


def _not_callable_with_one(spec: str) -> str:
    """Why module:function cannot be called with one argument ("" when it can)."""
    module_name, _, name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and (module_name == e.name or module_name.startswith(e.name + ".")):
            return f"no module {e.name!r} in the project"
        raise  # the project's own import of a module it lacks: its FILE:LINE
    if not hasattr(module, name):
        return f"{module_name!r} has no {name!r}"
    found = getattr(module, name)
    if not callable(found):
        return f"{spec} is a {type(found).__name__}, not a function"
    try:
        inspect.signature(found).bind(None)
    except TypeError:
        return f"{spec} cannot be called with one argument, the slot's time"
    except ValueError:
        pass  # a builtin without a signature: let it try
    return ""
