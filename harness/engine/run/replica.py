"""Replica processes as the runner sees them: start, send a tick, release, stop, kill.

Each replica is a real OS process with its own memory and connection pool, forked from a
forkserver that has the heavy imports preloaded, so a deploy restart costs milliseconds.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import multiprocessing.util
import os
import signal
import sys
import threading
import time
import types
from contextlib import contextmanager
from functools import cache
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

from harness import interrupts
from harness.engine.inside import entry
from harness.engine.inside.messages import Broken, Ready, Release, Stop
from harness.engine.model.tracks import NO_RULES, SeamRules
from harness.errors import UserError
from harness.infra import cleanup

START_TIMEOUT_S = 30.0
FORKSERVER_STOP_S = 2.0  # at exit, for the forkserver to go once asked


class ReplicaDied(RuntimeError):
    pass


@cache
def context():
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["harness.engine.inside.quiet", "harness.engine.inside.agent"])
    cleanup.mark(Path(multiprocessing.util.get_temp_dir()))  # its socket's dir: `clean` knows it
    atexit.register(_stop_forkserver)
    _start_forkserver()
    return ctx


SHUTDOWN_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _start_forkserver() -> None:
    """Start the forkserver with Ctrl-C and SIGTERM blocked, as multiprocessing starts its
    resource tracker: a Ctrl-C to the process group while its Python starts up would otherwise
    print a traceback of the import it cut (or "Fatal Python error: init_import_site"). It
    inherits the mask and unblocks them once its first preload ignores them
    (harness.engine.inside.quiet); here they are delivered as soon as it has started."""
    from multiprocessing import forkserver, resource_tracker

    resource_tracker.ensure_running()  # first: its own start unblocks both when it is done
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, SHUTDOWN_SIGNALS)
    try:
        forkserver.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _stop_forkserver() -> None:
    """Wait for the forkserver and the resource tracker to exit with us, so nothing of the lab
    outlives the command. (Each would exit on its own when our end of its pipe closes, but a
    moment later.)"""
    from multiprocessing import forkserver, resource_tracker

    with contextlib.suppress(AttributeError, OSError, ChildProcessError):
        _end_forkserver(forkserver._forkserver)
    with contextlib.suppress(AttributeError, OSError, ChildProcessError):
        resource_tracker._resource_tracker._stop()


def _end_forkserver(server) -> None:
    """Ask the forkserver to stop, as multiprocessing's own `_stop` does (close our end of its
    alive pipe), and wait for it. It stays while a process it forked lives (each holds a copy of
    that pipe): one left unknown to its Replica (start_process shields that window from Ctrl-C;
    this is the net under it) would wait for our messages while we wait for the forkserver. So
    after FORKSERVER_STOP_S the forkserver is killed, and what it forked dies with it."""
    with server._lock:
        pid = server._forkserver_pid
        if pid is None:
            return
        os.close(server._forkserver_alive_fd)
        server._forkserver_alive_fd = server._forkserver_pid = None
        deadline = time.monotonic() + FORKSERVER_STOP_S
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.01)
        address, server._forkserver_address = server._forkserver_address, None
        if not multiprocessing.util.is_abstract_socket_namespace(address):
            os.unlink(address)


@contextmanager
def _bare_main():
    """Start children without re-importing the caller's __main__ (pytest, a script, the CLI):
    replicas need only the stage and harness.engine.inside.agent; a re-import costs time per
    process."""
    real = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = real


_starting = threading.Lock()  # runs side by side share this process: one __main__ swap at a time


def start_process(proc) -> None:
    """Start `proc` from the forkserver. A Ctrl-C waits until it is started: cut in between, the
    forkserver's child would wait for the process object we had not sent yet."""
    with interrupts.shielded(), _starting, _bare_main():
        proc.start()


def prepare() -> None:
    """Start the forkserver before runs go on in several threads."""
    context()


class Forks(Protocol):
    """Where a replica can come from instead of the forkserver (harness.engine.run.zygote)."""

    def ask(self, env: dict[str, str]) -> None:
        """Ask for a process with `env` added, to `take` later."""
        ...

    def take(self) -> tuple[Any, Connection]:
        """The process asked for, started (pid, is_alive, join, send_signal), and the
        harness's end of its pipe."""
        ...


class Replica:
    """A replica process (entry.serve), or with `task` a one-shot task process that runs
    that command once (entry.run_task): the scheduler's ephemeral container."""

    def __init__(self, name: str, stage_path: Path, env: dict[str, str],
                 rules: SeamRules = NO_RULES, task: tuple[str, ...] | None = None,
                 zygote: Forks | None = None):
        self.name = name
        self.zygote = zygote  # forked from it (harness.engine.run.zygote) instead of the forkserver
        self.stage_path = stage_path
        self.env = env
        self.rules = rules
        self.task = task
        self.proc = None
        self.conn: Connection | None = None
        self.asked: Forks | None = None  # the zygote asked for the process, not yet taken
        self.told_to_stop = False  # Stop sent, the process not yet waited for

    @property
    def app_name(self) -> str:
        return self.env["PGAPPNAME"]

    def start(self) -> None:
        self.spawn()
        self.wait_ready()

    def spawn(self) -> None:
        """Fork the process; it imports the stage and connects while others are spawned. The
        first from the zygote where there is one; a later one (a restart: a deploy's new
        container) from the forkserver, importing the stage anew."""
        zygote, self.zygote = self.zygote, None
        if zygote is not None:
            zygote.ask(self.env)
            self.asked = zygote
            return
        ctx = context()
        parent, child = ctx.Pipe()
        target, args = entry.serve, (child, str(self.stage_path), self.env, self.rules)
        if self.task is not None:
            target, args = entry.run_task, (*args, self.task)
        self.proc = ctx.Process(target=target, args=args,
                                name=f"racelab-replica-{self.name}", daemon=True)
        with interrupts.shielded():  # a Ctrl-C waits until the process and its pipe are known
            start_process(self.proc)
            child.close()
            self.conn = parent

    def _taken(self) -> None:
        """The process the zygote was asked for, now known (its pid and pipe)."""
        if self.asked is not None:
            zygote, self.asked = self.asked, None
            self.proc, self.conn = zygote.take()

    def wait_ready(self) -> None:
        self._taken()
        msg = self._recv(START_TIMEOUT_S)
        if isinstance(msg, Broken):  # an error in the stage's own files: the user's to fix
            raise UserError(f"replica {self.name} could not start the stage: {msg.line}")
        if not isinstance(msg, Ready):
            raise ReplicaDied(f"replica {self.name} did not start: {msg!r}")

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.is_alive()

    def send(self, msg: object) -> None:
        assert self.conn is not None
        self.conn.send(msg)

    def release(self) -> None:
        """Let a process held before the end of its transaction go on."""
        self.send(Release())

    def recv(self, timeout: float) -> object:
        return self._unbroken(self._recv(timeout))

    def _recv(self, timeout: float) -> object:
        assert self.conn is not None
        if not self.conn.poll(timeout):
            raise ReplicaDied(f"replica {self.name} did not answer within {timeout:.0f}s")
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            raise ReplicaDied(f"replica {self.name} exited") from None

    def take(self) -> object:
        """Its message, known to be there (a poll of its pipe said so): no second poll."""
        assert self.conn is not None
        try:
            return self._unbroken(self.conn.recv())
        except (EOFError, OSError):
            raise ReplicaDied(f"replica {self.name} exited") from None

    def _unbroken(self, msg: object) -> object:
        """A replica that found, mid-run, that it cannot go on as asked (a project's job on a
        database it was not given) says why and ends: the user's to fix, one line."""
        if isinstance(msg, Broken):
            raise UserError(f"replica {self.name}: {msg.line}")
        return msg

    def stop(self) -> None:
        """Graceful stop; falls back to SIGKILL. Safe to call twice."""
        with contextlib.suppress(ReplicaDied):  # a zygote that went took its children along
            self._taken()
        if self.proc is None:
            return
        try:
            if self.proc.is_alive():
                if not self.told_to_stop:
                    self.send(Stop())
                self.proc.join(5)
        except (BrokenPipeError, OSError):
            pass
        self.told_to_stop = False
        self.kill()

    def tell_to_stop(self) -> None:
        """Ask it to stop and go on (`stop` then waits for it): many stop side by side."""
        try:
            if self.proc is not None and self.proc.is_alive():
                self.send(Stop())
                self.told_to_stop = True
        except (BrokenPipeError, OSError):
            pass

    def pause(self) -> None:
        """SIGSTOP: the process stands still (a GC pause, a frozen container) until `resume`."""
        if self.proc is not None:
            _signal(self.proc, signal.SIGSTOP)

    def resume(self) -> None:
        if self.proc is not None:
            _signal(self.proc, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL, as the orchestrator does to a stuck container. Safe to call twice."""
        with contextlib.suppress(ReplicaDied):
            self._taken()
        if self.proc is None:
            return
        if self.proc.is_alive():
            try:
                _signal(self.proc, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc.ident is not None:  # started (an interrupt may come before it is)
            self.proc.join(5)
        if self.conn is not None:
            self.conn.close()
        self.proc = None
        self.conn = None


def _signal(proc, sig: int) -> None:
    """A forkserver child by its pid; a zygote's through its own send_signal."""
    if hasattr(proc, "send_signal"):
        proc.send_signal(sig)
    else:
        os.kill(proc.pid, sig)


def schema_ddl(stage_path: Path, *how) -> list[str]:
    """The stage's CREATE statements, computed in a child (stages share a package name);
    `how`: where another app's models are, agent.schema_ddl's models, env and callables."""
    ctx = context()
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=entry.schema_ddl, args=(child, str(stage_path), *how), daemon=True)
    try:
        start_process(proc)
        child.close()  # ours closed, its exit is an EOF here
        if not parent.poll(START_TIMEOUT_S):
            raise ReplicaDied(f"could not read the schema of {stage_path.name}")
        msg = parent.recv()
        if isinstance(msg, Broken):  # the stage's own error
            raise UserError(f"{stage_path.name}: {msg.line}")
        return msg
    except EOFError:
        raise ReplicaDied(f"could not read the schema of {stage_path.name}") from None
    finally:
        child.close()  # also when a Ctrl-C came out of start_process
        if proc.pid is not None:  # started (a Ctrl-C is raised once it is)
            proc.join(5)
            if proc.is_alive():
                proc.kill()
        parent.close()
