"""Faults: a fault in a scenario is data (kind, when, which replica); its kind is one object
that knows what the fault needs, how to say it, and what it does to a run.

The runner never asks which kind it holds: it calls the same hooks on every fault. Where a kind
acts is its `where`:
- "data" faults change the seeded database before the replicas start (the track's world asks);
- "seam" faults arm a hook inside a replica process for its first tick at or after `at`; what
  it raises after is the kind's `seam_crash` (harness.engine.model.faults), sent with the tick;
- "process" faults act on the replicas' OS processes or their connections;
- "env" faults act on what surrounds the replicas (Redis, load), through the track's world.
Its hooks act through the run-control handle they are given (harness.engine.model.control), never
through the loop that plays the run. Kinds register with harness.engine.model.registry.add_fault.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harness.engine.model import registry
from harness.engine.model.history import Event
from harness.engine.model.scenario import Fault

if TYPE_CHECKING:
    from harness.engine.model.control import RunControl, RunServer
    from harness.engine.model.scenario import Scenario
    from harness.engine.model.stages import Stage

__all__ = ["AT_END", "Fault", "FaultKind", "HoldAt", "InjectedCrash", "SeamCrash", "kind_of",
           "of_where", "restart_times"]

# -- what a seam fault does inside a replica, as the fault declares it --------------------------
# The harness arms a seam fault in one process for one tick by sending its `SeamCrash` in the
# Tick message (harness.engine.inside.messages); the hooks there (harness.engine.inside.seams) raise
# `InjectedCrash` right after the first statement it matches. Which statements match is the
# fault's to say, not a constant of the hooks.

VERBS = ("INSERT", "UPDATE")  # the statements a crash can follow, or a hold come before


def statement_words(verb: str, table: str) -> str:
    """A write in words: 'INSERT INTO t' or 'UPDATE t'."""
    return f"INSERT INTO {table}" if verb == "INSERT" else f"UPDATE {table}"


class InjectedCrash(RuntimeError):
    """Raised by an armed seam fault: the job dies right after the statement it follows."""


@dataclass(frozen=True)
class SeamCrash:
    """Raise once, right after the first `after` statement (INSERT or UPDATE) on one of
    `tables`, whatever rows it touched; `fault` names the process its crash op is recorded
    under (the fault's name)."""

    fault: str
    after: str
    tables: frozenset[str]

    def __post_init__(self) -> None:
        if self.after not in VERBS:
            raise ValueError(f"a seam crash follows one of {', '.join(VERBS)}, not {self.after!r}")

    def trips(self, verb: str, table: str) -> bool:
        """Whether a statement `verb` on `table` is the one it raises after."""
        return verb == self.after and table in self.tables

    def statement(self, table: str) -> str:
        """The statement it raised after, in words: 'INSERT INTO t' or 'UPDATE t'."""
        return statement_words(self.after, table)


@dataclass(frozen=True)
class HoldAt:
    """Where a tick's hold stops it, sent with the tick: before its first transaction ends (the
    default); `early`, before that transaction's first statement; `verb` and `table`, before
    the tick's first such statement (the transactions before it pass, as a pass that comes
    after the tick's checks); `calls` False: past a library's call hold point (the worker's
    HOLD_POINTS), which is otherwise a hold as a COMMIT is."""

    early: bool = False
    verb: str = ""
    table: str = ""
    calls: bool = True

    def __post_init__(self) -> None:
        if self.verb and self.verb not in VERBS:
            raise ValueError(f"a hold comes before one of {', '.join(VERBS)}, not {self.verb!r}")

    def at_end(self) -> bool:
        """Whether a transaction's end (COMMIT, ROLLBACK) is the hold."""
        return not self.verb

    def trips(self, verb: str, table: str) -> bool:
        """Whether a statement `verb` on `table` is the one it holds before."""
        return bool(self.verb) and verb == self.verb and table == self.table

    def words(self) -> str:
        """Where it holds, in words: 'UPDATE workspaces'."""
        return statement_words(self.verb, self.table)


AT_END = HoldAt()  # the hold most ticks have: before their first transaction ends


class FaultKind:
    """One kind of fault. Subclasses set the fields and override the hooks they need."""

    name = ""
    where = "process"  # data, seam, process or env
    summary = ""
    needs_at = False
    needs_replica = False
    track: str | None = None  # the only track it applies to; None: any
    borrowed_by: tuple[str, ...] = ()  # tracks that run its track's scenarios with it as they ship

    # -- validation (a scenario file's [[faults]] entry) ------------------------------------

    def validate(self, raw: dict[str, Any], where: str, names: list[str], bad, track: str,
                 window: tuple[datetime, datetime] | None, parse_time) -> Fault:
        """The fault an entry describes, or `bad(key, why)` raised as a UserError."""
        for key in ("at", "replica"):
            if self.where == "data" and key in raw:
                raise bad(f"{where}.{key}", f"{self.name} changes the data before the run "
                          f"starts; it takes no {key} (allowed: kind)")
        if self.track not in (None, track) and track not in self.borrowed_by:
            raise bad(f"{where}.kind",
                      f"{self.name} is a fault of the {self.track} track, not {track}")
        at = None
        if "at" in raw:
            try:
                at = parse_time(raw["at"])
            except (TypeError, ValueError) as e:
                raise bad(f"{where}.at", str(e)) from None
        elif self.needs_at:
            raise bad(f"{where}.at", f"{self.name} needs a time")
        if at is not None and window and not window[0] <= at < window[1]:
            raise bad(f"{where}.at", f"{at.isoformat()} is outside the run, which goes from "
                      f"{window[0].isoformat()} up to {window[1].isoformat()}")
        replica = raw.get("replica")
        if replica is not None and replica not in names:
            raise bad(f"{where}.replica", f"{replica!r} is not one of {', '.join(names)}")
        if replica is None and self.needs_replica:
            raise bad(f"{where}.replica", f"{self.name} needs a replica ({', '.join(names)})")
        return Fault(self.name, at, replica)

    def applies_to(self, stage: Stage) -> bool:
        """Whether a run of this stage can carry the fault (the matrix skips it otherwise)."""
        return True

    def check_stage(self, stage: Stage, s: Scenario) -> None:
        """Raise UserError when the fault means nothing for the stage."""

    def describe(self, f: Fault) -> str:
        """The fault in the run's event log, e.g. 'kill-mid-tick on B at Fri 18:00:00'."""
        parts = [f.kind]
        if f.replica:
            parts.append(f"on {f.replica}")
        if f.at:
            parts.append(f"at {f.at:%a %H:%M:%S}")
        return " ".join(parts)

    def why_not_applied(self, f: Fault, s: Scenario) -> str:
        """Why the fault never acted in a run of s (the run warns and its JSON says so)."""
        on = f"replica {f.replica}" if f.replica else "any replica"
        since = f" at or after {f.at:%a %H:%M:%S}" if f.at else ""
        what = {"seam": "wrote what it fires after", "process": "held a transaction open"}.get(
            self.where, "gave it a chance to act")
        return f"no tick of {on}{since} {what} before the run ended at {s.end:%a %H:%M:%S}"

    # -- effect ------------------------------------------------------------------------------

    def start_server(self, s: Scenario) -> RunServer | None:
        """A PostgreSQL server the run must have of its own (started here, closed by the run):
        None, the shared one does."""
        return None

    def boots(self, f: Fault, s: Scenario) -> dict[str, list[datetime]]:
        """Later boots of replicas the fault causes (their tick phase restarts)."""
        return {}

    def acts_at(self, f: Fault) -> datetime | None:
        """The instant the fault acts from outside the replicas, if any."""
        return f.at if self.where in ("process", "env") else None

    def strike(self, f: Fault, run: RunControl, t: datetime) -> list[Event]:
        """Act on the run at its `acts_at` (or at the start when the fault has no time); the
        lines it returns join the timeline after what it told `run`."""
        return []

    def interrupts(self, f: Fault) -> bool:
        """Whether the fault acts inside a replica's open transaction (see `interrupt`)."""
        return False

    records_ops = False  # True: its hooks record their own ops (kill, pause…) in the history
    waits_for_transaction = False  # True: a tick that opened none leaves it for the next one
    hold_at = AT_END  # where in the tick it interrupts (`interrupt`): a transaction's end

    def interrupt(self, f: Fault, run: RunControl, replica: str, t: datetime) -> bool | None:
        """Act on a replica held where the kind's `hold_at` says (before the end of its
        transaction, unless it says otherwise) in its tick at t: let it go
        on (`run.release(replica)`, after acting on it), or take its tick out of the instant
        (`run.kill`, `run.keep_held`); a tick it leaves held goes on after it. False: it let
        the tick go untouched, so the fault has not acted (yet)."""

    def arms_seam(self, f: Fault) -> bool:
        """Whether the fault arms the seam hook inside one process (see
        harness.engine.inside.seams)."""
        return self.where == "seam"

    def seam_crash(self, f: Fault, crash_tables: frozenset[str]) -> SeamCrash:
        """What a seam fault does inside the process it is armed in, sent there with its tick:
        here, raise after the first INSERT into one of the tables its track names
        (`crash_tables`); a kind of its own declares another statement or other tables."""
        return SeamCrash(f.kind, "INSERT", crash_tables)


def kind_of(f: Fault) -> FaultKind:
    return registry.fault_kinds()[f.kind]


def of_where(faults: tuple[Fault, ...], where: str) -> list[Fault]:
    return [f for f in faults if kind_of(f).where == where]


def restart_times(s: Scenario) -> dict[str, list[datetime]]:
    """When each replica boots again because a fault replaced it (its tick phase restarts)."""
    boots: dict[str, list[datetime]] = {}
    for f in s.faults:
        for name, times in kind_of(f).boots(f, s).items():
            boots.setdefault(name, []).extend(times)
    return boots


def start_server(s: Scenario) -> RunServer | None:
    """The server of the run's own that a fault of `s` starts (the first that needs one)."""
    for f in s.faults:
        if (server := kind_of(f).start_server(s)) is not None:
            return server
    return None
