"""Step mode: same-instant starts move one statement at a time, and a chooser picks who moves.

In step mode a replica (or task) holds before every SQL statement and before its COMMIT or
ROLLBACK (harness.engine.inside.seams). At an instant with two or more starts, the `Stepper` sends
all their ticks, lets each run to its first hold, then asks its `Chooser` who moves next, over and
over: the chosen process runs its one statement and holds again, finishes its tick, or is
blocked by the database (it waits on another's row or lock: `waits.holders`). A blocked process
cannot be chosen until the lock table says its wait is over. Instants with one start run as
they always do: there is nothing to choose.

A schedule is the letters of the processes chosen, in order, one group per instant that had a
choice, separated by spaces (`AAB BA`; `-` for such an instant where nobody took a step):
`format_schedule`; `parse_schedule` reads it back (harness.engine.explore.replay).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from multiprocessing.connection import wait
from typing import Protocol

from harness.engine.inside.messages import Done, Held
from harness.engine.run.fleet import POOL_PER_REPLICA
from harness.engine.run.interleave import Moment
from harness.engine.run.replica import ReplicaDied
from harness.errors import UserError

SETTLE_TIMEOUT_S = 20.0  # a statement that neither ends nor blocks in this long is a hang
# A statement that has not answered in this long may be waiting on a lock: the lock table is
# read then. With an exploration's one run per core on 2 cores, most statements answer in
# 2-6 ms (a fresh session, a shared CPU): at 2 ms it was read ~10 times a schedule of 03 and
# found no wait (~4% of the CPU).
QUIET_S = 0.006


class Stuck(UserError):
    """A step that can never end: the tick waits on something no other replica's step can
    free (its own second session, a second pooled connection). `run` and `step` stop with the
    message; an exploration records `outcome` as the schedule's and goes on."""

    def __init__(self, message: str, outcome: str):
        super().__init__(message)
        self.outcome = outcome


@dataclass(frozen=True)
class View:
    """What the chooser sees before a step."""

    t: datetime  # the instant
    instant: int  # which instant with a choice, from 0
    step: int  # the step's position within its instant, from 0
    next: dict[str, str]  # each process that can move: the statement it runs next
    blocked: dict[str, list[str]]  # each process the database holds back: whom it waits for
    done: list[str]  # processes whose tick ended
    previous: str | None  # who moved last in this instant
    state: Callable[[], dict | None] = lambda: None  # the shared state now (a query: lazy)


@dataclass(frozen=True)
class Step:
    instant: int
    options: tuple[str, ...]  # who could move, in letter order
    chosen: str
    previous: str | None

    @property
    def preempts(self) -> bool:
        """Switching away from a process that could still move."""
        return self.previous in self.options and self.chosen != self.previous


class Chooser(Protocol):
    def choose(self, view: View) -> str:
        """The name of one of `view.next`; raise UserError to stop the run."""
        ...


def default_choice(view: View) -> str:
    """The schedule with no preemption: the one that moved last goes on while it can, else the
    first that can move, in letter order."""
    return view.previous if view.previous in view.next else min(view.next)


@dataclass
class Stepper:
    """The interleaver of step mode (harness.engine.run.interleave.Interleaver): at an instant with
    two or more starts, its chooser picks who moves, a statement at a time."""

    chooser: Chooser
    steps: list[Step] = field(default_factory=list)
    instants: int = 0
    # a plain hand-off (a release to the next hold): s in all, and s of the harness's own (the
    # rest is the app's code and SQL: Held.ran_ns less the lab's hooks in there, Held.seam_ns)
    steps_s: list[float] = field(default_factory=list)
    handoffs: list[float] = field(default_factory=list)
    every_statement = True

    def instant(self, moment: Moment) -> None:
        if len(moment.starts) < 2:  # nothing to choose: the instant runs as it always does
            return moment.barrier()
        try:
            self._play(_Instant(moment), moment.t)
        except BaseException:  # a bad choice, Ctrl-C: a held process never finishes its tick
            for name in moment.starts:
                moment.kill(name)
            raise

    def _play(self, play: _Instant, t: datetime) -> None:
        play.start()
        previous: str | None = None
        position = 0
        while play.held or play.blocked:
            if not play.held:  # all wait on each other: the database's deadlock check decides
                play.await_any()
                continue
            view = View(t, self.instants, position, dict(sorted(play.held.items())),
                        dict(play.blocked), sorted(play.done), previous, play.state)
            name = self.chooser.choose(view)
            if name not in play.held:
                raise UserError(f"step {position + 1} at {t:%H:%M:%S}: {why_not(view, name)}")
            self.steps.append(Step(self.instants, tuple(view.next), name, previous))
            began = time.perf_counter()
            if play.move(name, position):
                took = time.perf_counter() - began
                self.steps_s.append(took)
                self.handoffs.append(took - play.app_ns / 1e9)
            previous, position = name, position + 1
        self.instants += 1
        play.moment.end()

    def schedule(self) -> str:
        return format_schedule(self.steps)


def why_not(view: View, name: str) -> str:
    """Why `name` cannot move now, in words."""
    if name in view.blocked:
        return f"{name} is blocked: it waits for {' and '.join(view.blocked[name])}"
    if name in view.done:
        return f"{name} has finished its tick"
    can = ", ".join(view.next)
    return f"no process {name!r} in this instant (can move: {can})"


class _Instant:
    """The processes of one instant in step mode: held (with the statement next), blocked (with
    whom they wait for) or done."""

    def __init__(self, moment: Moment):
        self.moment = moment
        self.held: dict[str, str] = {}
        self.blocked: dict[str, list[str]] = {}
        self.done: set[str] = set()
        self.app_ns = 0  # the last Held's: the app's own time in it since its release
        self.frees: dict[str, bool] = {}  # whether each held one's next step can free a lock

    def state(self) -> dict | None:
        return self.moment.state()

    def start(self) -> None:
        for name in self.moment.starts:
            self.moment.start(name)
        for name in self.moment.starts:
            self.settle(name)

    def move(self, name: str, position: int) -> bool:
        """Let `name` run its next statement; whether it then held again at once (a plain
        hand-off: neither blocked nor at the end of its tick)."""
        self.moment.stepped(name, self.held.pop(name), position)
        frees = self.frees.pop(name, True)  # this step's: settling reads the next one's
        self.moment.release(name)
        self.settle(name)
        handed = name in self.held
        if not (frees or name in self.done):
            return handed  # a statement that frees no lock ends nobody's wait
        for other in list(self.blocked):  # the step may have ended the wait of another
            if not self.moment.holders(other):
                del self.blocked[other]
                self.settle(other)  # woken, it may wait again (on the one woken beside it)
        return handed

    def await_any(self) -> None:
        conns = {self.moment.pipe(n): n for n in self.blocked}
        if not wait(list(conns), timeout=SETTLE_TIMEOUT_S):
            raise ReplicaDied(f"replicas {', '.join(sorted(self.blocked))} wait on each other")
        for conn in wait(list(conns), timeout=0):
            name = conns[conn]
            del self.blocked[name]
            self._answer(name)

    def settle(self, name: str, may_block: bool = True) -> None:
        """Wait until `name` holds before its next statement, ends its tick, or is blocked.
        The lock table is read only once the statement is slow to answer, and less often the
        longer it takes (a wait for a lock is rare; a statement that answers is the rule)."""
        pipe = self.moment.pipe(name)
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        pause = QUIET_S
        while time.monotonic() < deadline:
            if pipe.poll(pause):
                return self._answer(name)
            pause = min(pause * 2, 0.05)
            if not may_block or not self.moment.waiting(name):
                continue
            on = self.moment.holders(name)
            if on == [name]:  # a second session of its own holds the lock: nobody can free it
                raise Stuck(f"step mode: replica {name} waits on a lock held by another "
                            "session of its own, a deadlock inside one process that "
                            "PostgreSQL cannot see: the tick would hang",
                            f"{name}'s tick hangs: it waits on a lock of its own other session")
            if on:
                self.blocked[name] = on
                self.moment.blocked(name, on)
                return None
        raise self._stuck(name)

    def _stuck(self, name: str) -> Stuck:
        """Why `name` ran no statement and waited on no lock of another's, in one line: what its
        sessions were doing, and the limit it met."""
        seen = self.moment.sessions(name)
        head = (f"step mode: replica {name} ran no statement for {SETTLE_TIMEOUT_S:.0f} s (the "
                "limit of one step) and waits on no lock")
        open_ = [state for state, _ in seen if state.startswith("idle in transaction")]
        if len(open_) >= POOL_PER_REPLICA:
            return Stuck(f"{head}: its one pooled connection is open in a transaction, so a "
                         "second session in its tick waits for a connection; the lab gives "
                         f"each replica a pool of {POOL_PER_REPLICA} (DB_POOL_SIZE)",
                         f"{name}'s tick hangs: a second session waits for a connection "
                         f"(the lab's pool of {POOL_PER_REPLICA} a replica)")
        doing = ", ".join(f"{state} {event}".strip() for state, event in seen) or "none"
        return Stuck(f"{head}: it waits on something outside PostgreSQL's lock table (its "
                     f"sessions: {doing}); step mode can only schedule SQL statements and Redis "
                     "commands", f"{name}'s tick hangs: it ran no statement for "
                     f"{SETTLE_TIMEOUT_S:.0f} s outside PostgreSQL's lock table")

    def _answer(self, name: str) -> None:
        msg = self.moment.answer(name)
        if isinstance(msg, Held):
            self.held[name] = msg.next or msg.how.upper()
            self.app_ns = msg.ran_ns - msg.seam_ns
            self.frees[name] = msg.frees
            return
        assert isinstance(msg, Done), msg
        self.done.add(name)


def preemptions(steps: list[Step]) -> int:
    return sum(step.preempts for step in steps)


def format_schedule(steps: list[Step]) -> str:
    groups: list[str] = []
    for step in steps:
        if step.instant >= len(groups):
            groups += [""] * (step.instant + 1 - len(groups))
        groups[step.instant] += step.chosen
    return " ".join(group or "-" for group in groups)  # "-": an instant with no step
