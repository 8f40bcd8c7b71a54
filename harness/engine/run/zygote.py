"""Replicas forked from a zygote: a replica process stopped before its first tick.

An exploration runs one schedule after another, each with fresh replicas; starting one from
the forkserver imports the stage and opens its pool every time (tens of ms of CPU, the most of
a short schedule). A zygote does that once (harness.engine.inside.agent's `zygote`): the stage
imported under the seams, the pool's first connection open. Each replica is then a fork of it
that finds that connection in its pool, reset as a new session would be (DISCARD ALL) and
named its own, and answers Ready like any replica: the same code, the same state, never a tick
behind it. A child that ends with the session idle hands it back (harness.engine.inside
.app_pool's `Handover`), so a schedule pays neither a connection nor a new server process per
replica; one killed, or that left the session otherwise, hands nothing back, and the next
child gets a new connection. A connection that cannot be lent safely (TLS, a pool listener of
the app's own on new connections, statements prepared on first use) is not: each child then
connects itself, as before.

The children are the zygote's, not the harness's: `Forked` stands for one as far as a Replica
needs (its pid, alive or not, waited for), by signals to its pid; the zygote reaps them.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import signal
import threading
import time
from collections import OrderedDict
from multiprocessing import reduction
from multiprocessing.connection import Connection
from pathlib import Path

from harness.engine.inside import entry
from harness.engine.inside.messages import Broken, Fork, Ready, Stop
from harness.engine.model import scenario
from harness.engine.model.tracks import SeamRules
from harness.engine.run import replica
from harness.errors import UserError

START_TIMEOUT_S = 30.0
JOIN_POLL_S = 0.001


class ZygoteDied(replica.ReplicaDied):
    pass


class Forked:
    """A zygote's child as a Replica sees its process (pid, is_alive, join, send_signal).
    The zygote reaps its children as they end, so their pids are free at once: where the OS
    has pidfds (Linux) the process is held by one, opened as soon as its pid arrives, and a
    signal never reaches another process that got the pid since; elsewhere, by its pid."""

    def __init__(self, pid: int):
        self.pid = self.ident = pid
        self.fd: int | None = None
        if hasattr(os, "pidfd_open"):
            try:
                self.fd = os.pidfd_open(pid)
            except ProcessLookupError:
                self.fd = -1  # ended already

    def is_alive(self) -> bool:
        if self.fd is not None:
            return self.fd >= 0 and not select.select([self.fd], [], [], 0)[0]
        try:
            os.kill(self.pid, 0)
        except (ProcessLookupError, PermissionError):  # gone (or the pid is another's now)
            return False
        return True

    def send_signal(self, sig: int) -> None:
        if not self.is_alive():
            return
        if self.fd is not None:
            signal.pidfd_send_signal(self.fd, sig)
        else:
            os.kill(self.pid, sig)

    def join(self, timeout: float | None = None) -> None:
        if self.fd is not None and self.fd >= 0:
            select.select([self.fd], [], [], timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.is_alive() and (deadline is None or time.monotonic() < deadline):
            time.sleep(JOIN_POLL_S)

    def __del__(self) -> None:
        if self.fd is not None and self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


_open: set[Zygote] = set()  # closed at exit if their owner did not: see close_all


def close_all() -> None:
    """Close every zygote still open. Run at exit before the forkserver is stopped: a zygote
    holds the forkserver's alive pipe and waits on ours, so one left open would keep both
    waiting on each other and the command from ever exiting."""
    for z in list(_open):
        z.close()


class Zygote:
    """One zygote process: a stage under the seams, with an environment every child shares
    (`env`; each child adds its own, its PGAPPNAME); with `lend`, its pooled connection lent to
    each child in turn."""

    def __init__(self, stage_path: Path, env: dict[str, str], rules: SeamRules,
                 lend: bool = True):
        if not _open:
            atexit.register(close_all)  # after the forkserver's: so it runs before
        _open.add(self)
        self.env = env
        ctx = replica.context()
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=entry.zygote,
                                args=(child, str(stage_path), env, rules, lend),
                                name="racelab-zygote", daemon=True)
        replica.start_process(self.proc)
        child.close()
        self.stage_name = stage_path.name
        self.ready = False  # it imports and connects while the caller goes on: see `_wait_ready`

    def _wait_ready(self) -> None:
        """Wait for its Ready (once): the zygotes of a run start side by side."""
        if self.ready:
            return
        try:
            if not self.conn.poll(START_TIMEOUT_S):
                raise ZygoteDied(f"the zygote of {self.stage_name} did not start")
            msg = self.conn.recv()
        except (EOFError, OSError):
            self.close()
            raise ZygoteDied(f"the zygote of {self.stage_name} exited") from None
        except BaseException:
            self.close()
            raise
        if isinstance(msg, Broken):
            self.close()
            raise UserError(f"a replica could not start the stage: {msg.line}")
        if not isinstance(msg, Ready):
            self.close()
            raise ZygoteDied(f"the zygote of {self.stage_name} did not start: {msg!r}")
        self.ready = True

    def fork(self, env: dict[str, str]) -> tuple[Forked, Connection]:
        """A new child with `env` added; its process and the harness's end of its pipe (it
        answers Ready there once connected)."""
        self.ask(env)
        return self.take()

    def ask(self, env: dict[str, str]) -> None:
        """Ask for a child with `env` added, to `take` later: a run's zygotes fork side by
        side, and each child connects while the next is asked for."""
        try:
            self.conn.send(Fork(env))
        except (EOFError, OSError) as e:
            self._wait_ready()  # a stage that would not import says so
            raise ZygoteDied(f"the zygote exited: {e}") from None

    def take(self) -> tuple[Forked, Connection]:
        """The child asked for: its process and the harness's end of its pipe."""
        self._wait_ready()
        try:
            if not self.conn.poll(START_TIMEOUT_S):
                raise ZygoteDied("the zygote did not fork")
            pid = self.conn.recv()
            fd = reduction.recv_handle(self.conn)
        except (EOFError, OSError) as e:
            raise ZygoteDied(f"the zygote exited: {e}") from None
        return Forked(pid), Connection(fd)

    def close(self) -> None:
        """Stop it; its children die with it (they ask for that when forked). Idempotent, and
        once only when two threads close it at once (a rig at Ctrl-C, and close_all at exit):
        the first takes the process, the other finds none."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            if proc.is_alive():
                self.conn.send(Stop())
                proc.join(5)
        except (BrokenPipeError, OSError):
            pass
        if proc.is_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.join(5)
        with contextlib.suppress(OSError):  # closed under it by the other thread's exit
            self.conn.close()
        _open.discard(self)


KEPT_MAX = 8  # zygotes one process keeps between its runs (the idle one used longest ago goes)
KEPT_REPLICAS = 5  # a run of more replicas starts them from the forkserver, keeping none
SEEN_MAX = 64  # replicas' environments remembered, the oldest forgotten first
FILES_MAX = 500  # a stage folder with more files is not read at every run: nothing is kept
SKIPPED = {"__pycache__", "node_modules"}  # and folders whose name begins with a dot

Key = tuple[str, tuple, SeamRules, str, tuple[tuple[str, str], ...]]


def files_of(folder: Path) -> tuple | None:
    """What a zygote's import of the stage depends on: each file of its folder (name, size,
    mtime, ctime); None while one changed in the last `scenario.SETTLED_NS` (two writes within
    one tick of a coarse clock look alike), or for a folder of more than FILES_MAX files. An
    exercise's stage edited between two runs of one process is then imported again."""
    seen, now = [], time.time_ns()
    for top, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED and not d.startswith("."))
        for name in sorted(names):
            try:
                st = os.stat(os.path.join(top, name))
            except OSError:  # gone as we looked: changed
                return None
            if now - max(st.st_mtime_ns, st.st_ctime_ns) <= scenario.SETTLED_NS:
                return None
            seen.append((top, name, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
            if len(seen) > FILES_MAX:
                return None
    return tuple(seen)


class Kept:
    """Zygotes kept from one run to the next within a `keeping` block: the runs a matrix, a
    report or a property search plays one after another. A replica comes from a zygote when a
    run of the block that ended cleanly had a replica of the same stage, seams, name and
    environment (PGAPPNAME aside: the database's name is in it): the second such run makes the
    zygote, each later one forks from it. Outside a block nothing is kept: a lone run, or a few
    runs of a stage here and there, would pay a zygote's start and seldom fork from it (a test
    file of such runs took 6 % longer with zygotes kept for all of them). A replica's later
    process in a run (a restart) still comes from the forkserver (harness.engine.run.replica).
    A zygote a run is using is never closed for another; a run that failed closes the zygotes
    it used.

    Unlike an exploration's (harness.engine.explore.rig), these zygotes lend no connection: a
    run's faults kill and crash replicas mid-transaction, and a session whose socket the zygote
    still held a copy of would keep that transaction, and its locks, open after the child died.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._seen: OrderedDict[Key, None] = OrderedDict()
        self._kept: OrderedDict[Key, Zygote] = OrderedDict()  # the last used, last
        self._busy: set[Key] = set()
        self._blocks = 0  # `keeping` blocks open (a matrix's cells run in several threads)

    @contextlib.contextmanager
    def keeping(self):
        """Runs in this block (in any thread) keep zygotes for one another; when the last open
        block ends, every zygote is closed and what was seen forgotten."""
        with self._lock:
            self._blocks += 1
        try:
            yield
        finally:
            with self._lock:
                self._blocks -= 1
                closing = list(self._kept.values()) if not self._blocks else []
                if not self._blocks:
                    self._kept.clear()
                    self._seen.clear()
                    self._busy.clear()
            for z in closing:
                z.close()

    def lease(self, stage_path: Path, rules: SeamRules, replicas: int) -> Lease | None:
        """Where one run's replicas come from; None outside a `keeping` block, for a run of many
        replicas, or of a stage whose files are not known settled (`files_of`)."""
        if not self._blocks or replicas > KEPT_REPLICAS:
            return None
        if (files := files_of(stage_path)) is None:
            return None
        return Lease(self, stage_path, files, rules)

    def _take(self, key: Key, env: dict[str, str], stage_path: Path) -> Zygote | None:
        """The zygote of `key`, now the caller's alone until `_give_back`; or None."""
        closing = []
        try:
            with self._lock:
                if key in self._busy or key not in self._seen:
                    return None
                z = self._kept.get(key)
                if z is not None and z.proc is not None and z.proc.is_alive():
                    self._kept.move_to_end(key)
                    self._busy.add(key)
                    return z
                if z is not None:  # it died: another takes its place
                    closing.append(self._kept.pop(key))
                idle = [k for k in self._kept if k not in self._busy]
                if len(self._kept) >= KEPT_MAX:
                    if not idle:
                        return None
                    closing.append(self._kept.pop(idle[0]))
                z = self._kept[key] = Zygote(stage_path, env, key[2], lend=False)
                self._busy.add(key)
                return z
        finally:
            for old in closing:  # outside the lock: another run's cell need not wait on it
                old.close()

    def _give_back(self, seen: list[Key], taken: list[Key], failed: bool) -> None:
        """A run ended: its zygotes free again (closed, if it failed); the replicas of a clean
        run remembered, so the next run with the same makes a zygote for them."""
        closing = []
        with self._lock:
            for key in taken:
                self._busy.discard(key)
                if failed and (z := self._kept.pop(key, None)) is not None:
                    closing.append(z)
            for key in [] if failed else seen:
                self._seen[key] = None
                self._seen.move_to_end(key)
            while len(self._seen) > SEEN_MAX:
                self._seen.popitem(last=False)
        for z in closing:
            z.close()


class Lease:
    """One run's replicas as `Kept` gives them: `zygote` for each, `end` when the run is over."""

    def __init__(self, kept: Kept, stage_path: Path, files: tuple, rules: SeamRules):
        self._kept, self._stage_path, self._files, self._rules = kept, stage_path, files, rules
        self._seen: list[Key] = []
        self._taken: list[Key] = []

    def zygote(self, name: str, env: dict[str, str]) -> Zygote | None:
        """The zygote replica `name` forks from, or None: start it from the forkserver."""
        shared = {k: v for k, v in env.items() if k != "PGAPPNAME"}
        key = (str(self._stage_path), self._files, self._rules, name,
               tuple(sorted(shared.items())))
        self._seen.append(key)
        z = self._kept._take(key, shared, self._stage_path)
        if z is not None:
            self._taken.append(key)
        return z

    def end(self, failed: bool = False) -> None:
        seen, taken, self._seen, self._taken = self._seen, self._taken, [], []
        self._kept._give_back(seen, taken, failed)


KEPT = Kept()
