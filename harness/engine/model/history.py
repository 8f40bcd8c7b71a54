"""A run's history as data, in the manner of a Jepsen history.

Every step a replica, a task, a scheduler, a fault or the harness takes is an `Op`: who took it
(`process`), what it was (`f`, one of `F`), whether it is the start of an interval (`invoke`) or
how one ended (`ok`, `fail`, or `info`: an outcome nobody can know, like a COMMIT whose
connection died; an op with no interval, like a log line, is a lone `info`), when in virtual
time (`t`) and what it carried (`value`). Each process stamps its ops on the machine's
monotonic clock as they happen (the replicas in their own processes, in the order their
statements ran); `History.ops_in_order` sorts on that stamp and numbers the ops, so `index`
is one total order across processes, within one instant and within one transaction.

A `State` is the shared state a track's reader cares about (coins paid, claim rows, Redis keys),
read by the harness when a process reported a tick that committed; it is tied to the last
completed COMMIT before the read (`after`, an op's index).

An `Event` is a line of the run's timeline: the same doings in words, for people (what each
replica attempted and how it ended, and when faults struck); nothing decides on its words.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


class F(StrEnum):
    """What an op did: one enum for every process (docs/racelab.schema.json lists it)."""

    TICK = "tick"  # a replica's tick: the job run once (interval)
    TASK = "task"  # a task process's one run of its command (interval)
    TXN = "txn"  # a database transaction, BEGIN to its end (interval)
    LOCK = "lock"  # pg_try_advisory(_xact)_lock: value.result is whether it was taken
    CLAIM = "claim"  # an INSERT … RETURNING into the claim table: value.result won or lost
    SENTINEL = "sentinel"  # the sentinel SELECT: value.result found or absent
    WRITE = "write"  # one INSERT or UPDATE: value.table, value.rows, value.updated
    COMMIT = "commit"  # COMMIT: ok, fail (it raised), info (the connection died under it)
    ROLLBACK = "rollback"
    HOLD = "hold"  # held before the end of a transaction while the harness lines others up
    BLOCK = "block"  # the harness saw the process wait on another's lock (value.on: holders)
    STEP = "step"  # step mode: the harness let the process run its next statement or Redis
    # command (value.next: its words, as `racelab step` shows them)
    SEND = "send"  # the app sent something out (an alert, a webhook)
    DEDUP = "dedup"  # the app's own duplicate check: value.key, value.result
    DECIDE = "decide"  # another of the app's own decisions its track's hooks watch
    LOG = "log"  # one of the app's log records (INFO and up)
    OUTPUT = "output"  # a line a task printed
    EXIT = "exit"  # a task's exit code
    ERROR = "error"  # the tick raised
    WAKEUP = "wakeup"  # a library asked to be woken at value.at
    SCHEDULE = "schedule"  # a scheduler's own doing (a delivery, a retry, a dead letter)
    CRASH = "crash"  # a seam fault raised inside the process
    KILL = "kill"  # SIGKILL
    RESTART = "restart"  # a process replaced by a fresh one
    TERMINATE = "terminate"  # pg_terminate_backend on a process's connection
    PAUSE = "pause"  # SIGSTOP
    RESUME = "resume"  # SIGCONT
    FAULT = "fault"  # a fault's doing none of the above names (a data or environment fault)


# the SQLSTATEs with which PostgreSQL aborts a transaction because of what others did at the same
# time: its manual leaves the retry to the application (none of the lab's stages retries)
ABORTS = {"40001": "serialization failure", "40P01": "deadlock detected"}


class Type(StrEnum):
    INVOKE = "invoke"
    OK = "ok"
    FAIL = "fail"
    INFO = "info"


def stamp() -> int:
    """The monotonic clock every lab process shares on one machine, in nanoseconds."""
    return time.monotonic_ns()


@dataclass(frozen=True)
class Op:
    process: str
    type: Type
    f: F
    t: datetime
    value: dict = field(default_factory=dict)
    at: int = field(default_factory=stamp)  # the monotonic stamp it is ordered by

    def to_json(self, index: int) -> dict:
        return {"index": index, "process": self.process, "type": self.type.value,
                "f": self.f.value, "t": self.t.isoformat(), "value": self.value}


@dataclass(frozen=True)
class State:
    t: datetime
    value: dict
    at: int = field(default_factory=stamp)


class History:
    """The ops of one run, from every process, and the states read along it."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.states: list[State] = []

    def add(self, process: str, type_: Type, f: F, t: datetime, value: dict | None = None
            ) -> None:
        self.ops.append(Op(process, type_, f, t, value or {}))

    def from_process(self, process: str, t: datetime, raw: list[tuple],
                     before: tuple[int, datetime] | None = None) -> None:
        """Ops a replica or task process recorded: (stamp, type, f, value[, process]), at t;
        with `before` (a stamp, a time), those stamped earlier happened at that earlier time
        (a tick that waited on a lock across instants reports them when it ends)."""
        for at, type_, f, value, *who in raw:
            when = before[1] if before and at < before[0] else t
            self.ops.append(Op(who[0] if who else process, Type(type_), F(f), when, value, at))

    def tick_ended(self, process: str, t: datetime, f: F, outcome: str, raw: list[tuple],
                   before: tuple[int, datetime] | None = None) -> bool:
        """A tick's (or task's) ops and its end (ok, failed, or unknown: info); whether it
        committed."""
        self.from_process(process, t, raw, before)
        end = {"ok": Type.OK, "failed": Type.FAIL}.get(outcome, Type.INFO)
        self.add(process, end, f, t, {"outcome": outcome})
        return any(op[2] == F.COMMIT.value and op[1] == Type.OK.value for op in raw)

    def abandon(self, process: str, t: datetime, value: dict) -> None:
        """The process died: each interval it left open ends `info` (nobody knows how it went),
        the innermost first."""
        open_: list[F] = []
        for op in self.ops_in_order():
            if op.process != process:
                continue
            if op.type is Type.INVOKE:
                open_.append(op.f)
            elif op.f in open_:  # a completion ends the innermost open interval of its f
                del open_[len(open_) - 1 - open_[::-1].index(op.f)]
        for f in reversed(open_):
            self.add(process, Type.INFO, f, t, value)

    def crashed(self, fault: str, since: int) -> bool:
        """Whether a seam fault of that name raised inside a process, in the ops recorded
        since position `since` (one process is armed at a time)."""
        return any(op.f is F.CRASH and op.process == fault for op in self.ops[since:])

    def woken_order(self) -> tuple[list[str], list[str]]:
        """The processes the harness saw wait on another's lock, in the order they began to
        wait, and in the order they went on: when the statement they waited in completed, on
        the process's own clock. Two waiters on one row are let on by PostgreSQL, not by the
        lab; the two lists differ when it let the later one through first."""
        ops = self.ops_in_order()
        began: list[str] = []
        went: list[tuple[int, str]] = []
        for i, op in enumerate(ops):
            if op.f is not F.BLOCK:
                continue
            began.append(op.process)
            waited = next((ops[j].f for j in range(i - 1, -1, -1) if ops[j].process ==
                           op.process and ops[j].type is Type.INVOKE), None)
            on = next((j for j in range(i + 1, len(ops)) if ops[j].process == op.process
                       and ops[j].f is waited and ops[j].type is not Type.INVOKE), len(ops))
            went.append((on, op.process))
        return began, [p for _, p in sorted(went)]

    def state(self, t: datetime, value: dict) -> None:
        self.states.append(State(t, value))

    def ops_in_order(self) -> list[Op]:
        return sorted(self.ops, key=lambda op: op.at)

    def to_json(self) -> tuple[list[dict], list[dict]]:
        ops = self.ops_in_order()
        history = [op.to_json(i) for i, op in enumerate(ops)]
        commits = [(op.at, i) for i, op in enumerate(ops)
                   if op.f is F.COMMIT and op.type is Type.OK]
        commit_at = [at for at, _ in commits]
        states = []
        for s in sorted(self.states, key=lambda s: s.at):
            n = bisect.bisect_right(commit_at, s.at)  # the commits at or before the state
            states.append({"after": commits[n - 1][1] if n else None, "t": s.t.isoformat(),
                           "value": s.value})
        return history, states


# -- the timeline: the run's doings in words, for people ---------------------------------------

HARNESS = "harness"  # the process of the harness's own lines (faults, lifecycle)


@dataclass(frozen=True)
class Event:
    t: datetime  # virtual time (the true one; a skewed replica's own clock goes in detail)
    replica: str  # "A", "B", … or "harness" for faults and lifecycle
    event: str  # tick, lock, claim, sentinel, write, log, commit, rollback, error, fault, …
    detail: str = ""
    outcome: str = ""  # for ticks: ok, failed or unknown
    # what the event says as data, for whatever reads it (the words in detail are for people):
    # a write's {"writes": [{table, rows, updated}]}; a fault's {"fault": its name as shown,
    # "on": [(replica, act)]}, act one of kill, restart, pause, resume, none
    data: dict = field(default_factory=dict, compare=False)

    def to_json(self) -> dict:
        data: dict = {"t": self.t.isoformat(), "replica": self.replica, "event": self.event,
                      "detail": self.detail}
        if self.outcome:
            data["outcome"] = self.outcome
        if self.event == "write":
            data["writes"] = self.data["writes"]
        return data
