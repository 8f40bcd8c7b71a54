"""Step mode: same-instant starts move one statement at a time, and a chooser picks who moves.

In step mode a replica (or task) holds before every SQL statement and before its COMMIT or
ROLLBACK (harness.engine.inside.seams). At an instant with two or more starts, the `Stepper` sends
all their ticks, lets each run to its first hold, then asks its `Chooser` who moves next, over and
over: the chosen process runs its one statement and holds again, finishes its tick, or is
blocked by the database (it waits on another's row or lock: `waits.blocking`). A blocked process
cannot be chosen until the lock table says its wait is over. Instants with one start run as
they always do: there is nothing to choose.

A schedule is the letters of the processes chosen, in order, one group per instant that had a
choice, separated by spaces (`AAB BA`; `-` for such an instant where nobody took a step):
`format_schedule`; `parse_schedule` reads it back (harness.engine.explore.replay).
"""

from __future__ import annotations

import functools
import os
import select
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from multiprocessing.connection import wait
from typing import Protocol

from harness.engine.inside.access import Access
from harness.engine.inside.messages import Done, Held, Stalled
from harness.engine.model.registry import Hook
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
    # what each one's next step touches; EVERYTHING unless the chooser reads it (READS_ACCESS)
    access: dict[str, Access] = field(default_factory=dict)
    # what each one's last step did: the ops it recorded, (stamp, type, f, value), as data
    ran: dict[str, tuple] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    instant: int
    options: tuple[str, ...]  # who could move, in letter order
    chosen: str
    previous: str | None
    # the waiters this step woke that raced for one lock (`RACY_WAITS`), and those of them that
    # went on; the rest wait for one that did. Empty: no race.
    racers: tuple[str, ...] = ()
    went: tuple[str, ...] = ()
    accesses: tuple[Access, ...] = ()  # what each of `options` would have touched, in order

    @property
    def preempts(self) -> bool:
        """Switching away from a process that could still move."""
        return self.previous in self.options and self.chosen != self.previous

    @property
    def token(self) -> str:
        """The step as a prefix of the search holds it: its letter, and after a race, who went
        on first (`A=C`: A moved, and of the waiters it woke C went on)."""
        return f"{self.chosen}={self.went[0]}" if self.racers else self.chosen


# The waits whose end is a race PostgreSQL decides, not a queue: on a transaction (every waiter
# on it is let go at once, and they meet again at the row or key) and on a row's tuple lock
# (queued, but the first in line lets the row go before it locks the row's new version).
# Waiters on any other lock (advisory, a relation) are let go one at a time, in queue order.
RACY_WAITS = ("transactionid", "tuple")


class Diverged(Exception):
    """A replay met a race between waiters that PostgreSQL decided otherwise than the schedule
    asks: the run is repeated (harness.engine.explore.strategy, `racelab run --schedule`)."""


class Chooser(Protocol):
    def choose(self, view: View) -> str:
        """The name of one of `view.next`; raise UserError to stop the run."""
        ...


# Optional, for a chooser that replays: of the waiters that the step at `position` may wake
# (`racers`), the one it asks to go on first, or None. The Stepper then tips PostgreSQL's
# pick that way (`_Instant.tip`); a run that still goes otherwise is repeated.
WANTS = Hook("wants", ("position", "racers"), lambda chooser: lambda position, racers: None)


# Optional, for a chooser that reads `View.access` (the reduction): only then does each replica
# read what its statements touch (a parse of every statement, in the replica, on every step).
READS_ACCESS = Hook("reads_access", None, lambda chooser: False)


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
            self._play(_Instant(moment, READS_ACCESS.of(self.chooser)), moment.t)
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
                        dict(play.blocked), sorted(play.done), previous, play.state,
                        {n: play.access[n] for n in sorted(play.held)}, dict(play.ran))
            name = self.chooser.choose(view)
            if name not in play.held:
                where = f"step {position + 1} at {t:%H:%M:%S}: {why_not(view, name)}"
                if name in play.blocked and any(s.racers for s in self.steps):
                    raise Diverged(f"{where}, though the schedule moves it: a race between "
                                   "waiters went another way (PostgreSQL's pick)")
                raise UserError(where)
            self.steps.append(Step(self.instants, tuple(view.next), name, previous,
                                   accesses=tuple(view.access.values())))
            began = time.perf_counter()
            handed, racers, went = play.move(  # a step that hangs stays listed
                name, position, functools.partial(WANTS.of(self.chooser), position))
            if handed:
                took = time.perf_counter() - began
                self.steps_s.append(took)
                self.handoffs.append(took - play.app_ns / 1e9)
            if racers:
                self.steps[-1] = replace(self.steps[-1], racers=racers, went=went)
            previous, position = name, position + 1
        self.instants += 1
        play.moment.end()

    def schedule(self) -> str:
        return format_schedule(self.steps)


def _answered(pipes: dict[int, str], timeout: float) -> list[str]:
    """Which of the processes whose pipes are `pipes` (file descriptor: name) have said
    something, or gone, within `timeout` s (a bare poll: the hot path of every step)."""
    poll = select.poll()
    for fd in pipes:
        poll.register(fd, select.POLLIN)
    return [pipes[fd] for fd, _ in poll.poll(timeout * 1000)]


def _untip(tipped: list[int]) -> None:
    """Each tipped server process back on every CPU, scheduled as before."""
    for pid in tipped:
        try:
            os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
            os.sched_setaffinity(pid, os.sched_getaffinity(0))
        except OSError:  # gone, or not ours to put back: it ends with the run
            pass


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
    whom they wait for) or done. Between two choices nobody runs: after a step, the harness
    waits until each process it released or woke holds again, ends its tick, or waits on a lock
    whose holders cannot move on their own (held, or themselves so waiting). That is decided
    from answers and the lock table, never from how long a statement took, so the same choices
    meet the same state, whatever the load (but for a race between waiters: `RACY_WAITS`)."""

    def __init__(self, moment: Moment, reads_access: bool = False):
        self.moment = moment
        self.reads_access = reads_access
        self.held: dict[str, str] = {}
        self.blocked: dict[str, list[str]] = {}
        self.waits_on: dict[str, str] = {}  # each blocked one's wait event (`RACY_WAITS`)
        self.shown: dict[str, list[str]] = {}  # each one's wait as last recorded
        self.done: set[str] = set()
        self.app_ns = 0  # the last Held's: the app's own time in it since its release
        self.frees: dict[str, bool] = {}  # whether each held one's next step can free a lock
        self.access: dict[str, Access] = {}  # what each held one's next step touches
        self.ran: dict[str, tuple] = {}  # the ops each one's last step recorded

    def state(self) -> dict | None:
        return self.moment.state()

    def start(self) -> None:
        for name in self.moment.starts:
            self.moment.start(name, self.reads_access)
        self._settle(set(self.moment.starts))

    def move(self, name: str, position: int, wants=lambda racers: None
             ) -> tuple[bool, tuple[str, ...], tuple[str, ...]]:
        """Let `name` run its next statement, and wait until nobody runs. Whether it then held
        again (a plain hand-off: neither blocked nor at the end of its tick), and the race the
        step began: the waiters it woke that raced, and those of them that went on. `wants(racers)`:
        the waiter a replay asks to go on first, if any."""
        self.moment.stepped(name, self.held.pop(name), position)
        frees = self.frees.pop(name, True)  # this step's: settling reads the next one's
        before = {p: (self.waits_on[p], on) for p, on in self.blocked.items()}
        may_race = tuple(sorted(p for p, (event, on) in before.items()
                                if event == "tuple" or (event == "transactionid" and name in on)))
        tipped = self.tip(may_race, wants(may_race)) if frees and len(may_race) > 1 else []
        self.moment.release(name)
        try:
            self._settle({name}, set(self.blocked) if frees else set())
        finally:
            _untip(tipped)
        went = [p for p in before if p not in self.blocked]
        racers = [p for p in before if (before[p][0] == "tuple" or (
            before[p][0] == "transactionid" and name in before[p][1]))]
        won = [p for p in racers if p in went]
        lost = [p for p in racers if p in self.blocked and set(self.blocked[p]) & set(won)]
        if not (won and lost):
            return name in self.held, (), ()
        return name in self.held, tuple(sorted(won + lost)), tuple(sorted(won))

    def tip(self, racers: tuple[str, ...], first: str | None) -> list[int]:
        """Tip PostgreSQL's pick among `racers` toward `first`: every racer's server process on
        one CPU, the others run only when it is idle (SCHED_IDLE), so that when the first woken
        lets the row go, the one asked for runs before it takes the row's new version. A tip,
        not a choice: the run is checked, and repeated while it goes otherwise. Where the lab
        may not (another user's server, no such call), nothing is tipped. The processes tipped."""
        if first is None or first not in racers:
            return []
        tipped = []
        try:
            cpu = min(os.sched_getaffinity(0))
            for racer, ids in self.moment.backends(list(racers)).items():
                for pid in ids:
                    os.sched_setaffinity(pid, {cpu})
                    tipped.append(pid)
                    if racer != first:
                        os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))
        except (OSError, AttributeError):  # not ours to move, or no such call here
            pass
        return tipped

    def await_any(self) -> None:
        """Nobody holds and all wait on each other: wait for the database to end a wait."""
        conns = {self.moment.pipe(n): n for n in self.blocked}
        if not wait(list(conns), timeout=SETTLE_TIMEOUT_S):
            raise ReplicaDied(f"replicas {', '.join(sorted(self.blocked))} wait on each other")
        ended = [conns[c] for c in wait(list(conns), timeout=0)]
        for name in ended:
            del self.blocked[name]
            self._answer(name)
        self._settle(set(), {p for p, on in self.blocked.items() if set(on) & set(ended)})

    def _settle(self, running: set[str], woken: set[str] = frozenset()) -> None:
        """Wait until none of `running` (released) and `woken` (whose wait a step may have
        ended) runs: each answered (held or done) or seen waiting on holders that stand still.
        The lock table is read only once a statement is slow to answer, and less often the
        longer it takes (a wait for a lock is rare; a statement that answers is the rule)."""
        for p in woken:
            self.blocked.pop(p, None)
        pending = set(running) | set(woken)
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        pause = QUIET_S
        while pending:
            answered = _answered({self.moment.pipe(p).fileno(): p for p in pending}, pause)
            for name in answered:
                self._answer(name)
                pending.discard(name)
            if not pending:
                return
            if answered:
                deadline = time.monotonic() + SETTLE_TIMEOUT_S
            else:
                pause = min(pause * 2, 0.05)
            done = set(self.done)  # ended before the lock table is read
            self._still(pending, self.moment.blocking(sorted(pending)), done)
            if pending and time.monotonic() > deadline:
                raise self._stuck(min(pending))

    def _still(self, pending: set[str], seen: dict[str, tuple[str, list[str]]],
               done: set[str] = frozenset()) -> None:
        """Mark blocked each of `pending` that waits on holders that stand still: held, blocked
        so themselves, or outside this instant. One that waits on a holder still running is
        left pending: its wait may end before the holder stops. One that waits on a holder
        whose tick had ended when the lock table was read (`done`) is Stuck: that lock stays
        until the holder's process ends, after the instant."""
        changed = True
        while changed:
            changed = False
            for name in sorted(pending):
                if name not in seen:
                    continue
                event, on = seen[name]
                if on == [name]:  # a second session of its own holds the lock: nobody can free it
                    raise Stuck(f"step mode: replica {name} waits on a lock held by another "
                                "session of its own, a deadlock inside one process that "
                                "PostgreSQL cannot see: the tick would hang",
                                f"{name}'s tick hangs: it waits on a lock of its own other "
                                "session")
                if kept := sorted(h for h in on if h in done):
                    who = " and ".join(kept)
                    raise Stuck(f"step mode: replica {name} waits on a lock that {who} still "
                                "holds though its tick has ended (a lock taken for the session "
                                "and never let go, or a transaction left open): nothing in this "
                                "instant can free it, so the tick would hang",
                                f"{name}'s tick hangs: it waits on a lock {who} kept after its "
                                "tick ended")
                if any(h in pending or h in self.done or h == name for h in on):
                    continue
                self.blocked[name], self.waits_on[name] = on, event
                if self.shown.get(name) != on:
                    self.moment.blocked(name, on)
                    self.shown[name] = on
                pending.discard(name)
                changed = True

    def _stuck(self, name: str) -> Stuck:
        """Why `name` ran no statement and waited on no lock of another's, in one line: what its
        sessions were doing, and the limit it met."""
        seen = self.moment.sessions(name)
        head = (f"step mode: replica {name} ran no statement for {SETTLE_TIMEOUT_S:.0f} s (the "
                "limit of one step) and waits on no lock")
        open_ = [state for state, _ in seen if state.startswith("idle in transaction")]
        if len(open_) >= POOL_PER_REPLICA:
            return _pool_stuck(name, f"{head}: its")
        doing = ", ".join(f"{state} {event}".strip() for state, event in seen) or "none"
        return Stuck(f"{head}: it waits on something outside PostgreSQL's lock table (its "
                     f"sessions: {doing}); step mode can only schedule SQL statements and Redis "
                     "commands", f"{name}'s tick hangs: it ran no statement for "
                     f"{SETTLE_TIMEOUT_S:.0f} s outside PostgreSQL's lock table")

    def _answer(self, name: str) -> None:
        self.shown.pop(name, None)
        msg = self.moment.answer(name)
        if isinstance(msg, Stalled):
            raise _pool_stuck(name, f"step mode: replica {name} waits for a connection: its")
        self.ran[name] = tuple(msg.ops)
        if isinstance(msg, Held):
            self.held[name] = msg.next or msg.how.upper()
            self.app_ns = msg.ran_ns - msg.seam_ns
            self.frees[name] = msg.frees
            self.access[name] = msg.access
            return
        assert isinstance(msg, Done), msg
        self.done.add(name)


def _pool_stuck(name: str, head: str) -> Stuck:
    return Stuck(f"{head} one pooled connection is open in a transaction, so a second session "
                 "in its tick waits for a connection; the lab gives each replica a pool of "
                 f"{POOL_PER_REPLICA} (DB_POOL_SIZE)",
                 f"{name}'s tick hangs: a second session waits for a connection (the lab's "
                 f"pool of {POOL_PER_REPLICA} a replica)")


def preemptions(steps: list[Step]) -> int:
    return sum(step.preempts for step in steps)


def format_schedule(steps: list[Step]) -> str:
    groups: list[str] = []
    for step in steps:
        if step.instant >= len(groups):
            groups += [""] * (step.instant + 1 - len(groups))
        groups[step.instant] += step.chosen
    return " ".join(group or "-" for group in groups)  # "-": an instant with no step
