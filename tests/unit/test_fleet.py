"""The Fleet's loop over virtual instants and its barrier, without PostgreSQL or processes.

Each replica is a `FakeReplica`: it answers the fleet over a real pipe (so the fleet's waits
work as they do on a process) as a script says: it holds before its COMMIT when told to hold,
commits when released, and one may be blocked by another's lock until that one commits. The
schedule of starts is given; fault kinds are small fakes acting through the run-control handle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from multiprocessing import Pipe
from types import SimpleNamespace

import pytest

from harness.engine.inside.messages import Done, Held, Release
from harness.engine.inside.messages import Tick as TickMessage
from harness.engine.model.clock import Tick
from harness.engine.model.faults import FaultKind
from harness.engine.model.history import HARNESS, Event, F, Type, stamp
from harness.engine.model.scenario import TZ, Fault, Scenario
from harness.engine.model.stages import Stage
from harness.engine.run import armed_faults
from harness.engine.run import fleet as fleet_module
from harness.engine.run.fleet import Fleet

T0 = datetime(2026, 5, 29, 18, 0, tzinfo=TZ)
MINUTE = timedelta(minutes=1)


@dataclass
class Lab:
    """What the fakes share: the script, and everything the fleet told them, in order."""

    blocked_by: dict[str, str] = field(default_factory=dict)  # replica -> whose lock it waits on
    crashes: set[str] = field(default_factory=set)  # replicas whose armed seam fault fires
    said: list[tuple[str, str]] = field(default_factory=list)  # (replica, what), in order
    replicas: dict[str, FakeReplica] = field(default_factory=dict)
    waiting: set[str] = field(default_factory=set)  # replicas the lock table shows waiting


class FakeReplica:
    """A replica process as the fleet sees it, played by a script (see the module's doc)."""

    lab: Lab

    def __init__(self, name, stage_path, env, rules=None, task=None, zygote=None):
        self.name, self.env = name, env
        self.conn, self._process = Pipe()
        self.hold = False
        self.crash = ""
        self.lab.replicas[name] = self

    @property
    def app_name(self) -> str:
        return self.env["PGAPPNAME"]

    def _say(self, what: str) -> None:
        self.lab.said.append((self.name, what))

    def spawn(self) -> None:
        self._say("spawn")

    def wait_ready(self) -> None:
        pass

    def start(self) -> None:
        self.conn, self._process = Pipe()
        self._say("start")

    def send(self, msg: object) -> None:
        if isinstance(msg, TickMessage):
            self.hold, self.crash = msg.hold, msg.crash.fault if msg.crash else ""
            self._say(f"tick hold={msg.hold} crash={self.crash}")
            if self.name in self.lab.blocked_by:
                self.lab.waiting.add(self.name)  # it answers once the lock's holder commits
            else:
                self._run()
        elif isinstance(msg, Release):
            self._say("release")
            self._commit()

    def _run(self) -> None:
        """Up to the end of its transaction: held there, or on to the COMMIT."""
        if self.hold:
            self._process.send(Held("commit", [(stamp(), "invoke", "txn", {})]))
        else:
            self._process.send(Done("ok", [], [(stamp(), "invoke", "txn", {})] + self._end()))

    def _commit(self) -> None:
        self._process.send(Done("ok", [], self._end()))
        for name, holder in list(self.lab.blocked_by.items()):
            if holder == self.name:  # its lock is free: the one waiting on it goes on
                del self.lab.blocked_by[name]
                self.lab.waiting.discard(name)
                self.lab.replicas[name]._run()

    def _end(self) -> list[tuple]:
        ops = [(stamp(), "ok", "commit", {})]
        if self.crash and self.name in self.lab.crashes:
            ops.insert(0, (stamp(), "info", "crash", {}, self.crash))
        return ops

    def recv(self, timeout: float) -> object:
        return self.conn.recv()

    def release(self) -> None:
        self.send(Release())

    def tell_to_stop(self) -> None:
        """Asked first, side by side with the others; `stop` is where it ends."""

    def stop(self) -> None:
        self._say("stop")

    def kill(self) -> None:
        self._say("kill")

    def pause(self) -> None:
        self._say("pause")

    def resume(self) -> None:
        self._say("resume")


class Starts:
    """A scheduler whose starts are given: {virtual time: replicas, in dispatch order}."""

    def __init__(self, plan: dict[datetime, list[str]]):
        self.plan = {t: [Tick(t, name, t) for name in names] for t, names in plan.items()}

    def times(self) -> set[datetime]:
        return set(self.plan)

    def due(self, t: datetime) -> tuple[list[Tick], list[Event]]:
        return self.plan.pop(t, []), []

    def finished(self, start, outcome: str) -> list[Event]:
        return []


class Keep(FaultKind):
    """Keeps the replica's held tick open for 5 minutes, then resumes it."""

    name = "keep"
    needs_at = needs_replica = True

    def interrupts(self, f: Fault) -> bool:
        return True

    def acts_at(self, f: Fault) -> datetime | None:
        return f.at + 5 * MINUTE

    def interrupt(self, f, run, replica, t):
        run.keep_held(replica)

    def strike(self, f, run, t):
        if run.is_kept(f.replica):
            run.resume(f.replica, t)
        return []


class LetGo(Keep):
    """Lets the held tick go untouched: it has not acted."""

    name = "let-go"

    def interrupt(self, f, run, replica, t):
        run.release(replica)
        return False


class Kill(Keep):
    """SIGKILLs the held replica and starts a fresh process in its place."""

    name = "kill"

    def acts_at(self, f: Fault) -> datetime | None:
        return None

    def interrupt(self, f, run, replica, t):
        run.kill(replica)
        run.restart(replica)


class Look(Keep):
    """Acts on nothing it holds: the tick it leaves held goes on."""

    name = "look"

    def acts_at(self, f: Fault) -> datetime | None:
        return None

    def interrupt(self, f, run, replica, t):
        run.note(replica, Event(t, HARNESS, "fault", f"look: {replica} is held"))


class Seam(FaultKind):
    name = "seam"
    where = "seam"


KINDS = {k.name: k for k in (Keep(), LetGo(), Kill(), Look(), Seam())}


@pytest.fixture
def lab(monkeypatch, tmp_path) -> Lab:
    lab = Lab()
    monkeypatch.setattr(FakeReplica, "lab", lab, raising=False)
    monkeypatch.setattr(fleet_module, "Replica", FakeReplica)
    monkeypatch.setattr(fleet_module.waits, "waiting",
                        lambda conn, db, app: app.rsplit(":", 1)[1] in lab.waiting)
    monkeypatch.setattr(fleet_module.waits, "blocking", lambda conn, db, apps: {
        app: ("advisory", [lab.blocked_by[name]]) for app in apps
        if (name := app.rsplit(":", 1)[1]) in lab.waiting and name in lab.blocked_by})
    monkeypatch.setattr(fleet_module.waits, "sessions",  # a holder's transaction is open
                        lambda conn, db, app: [("idle in transaction", "")])
    monkeypatch.setattr(armed_faults, "kind_of", lambda f: KINDS[f.kind])
    return lab


def play(monkeypatch, plan: dict[datetime, list[str]], *faults: Fault) -> Fleet:
    s = Scenario("fake", "cron", 2, 15 * MINUTE, T0, T0 + 60 * MINUTE, (timedelta(0),) * 2,
                 (timedelta(0),) * 2, faults)
    monkeypatch.setattr(fleet_module.schedulers, "for_run", lambda path, s: [Starts(plan)])
    world = SimpleNamespace(env={}, due=lambda t: [])
    conn = SimpleNamespace(info=SimpleNamespace(dbname="fake"))
    fleet = Fleet(Stage("03", "03-claim-row", "cron"), s, "postgresql://fake", "run", conn, world)
    seen: list[tuple[int, datetime]] = []
    fleet.on_instant = lambda done, t: seen.append((done, t))
    fleet.play()
    fleet.instants = seen
    return fleet


def ticks(fleet: Fleet) -> list[tuple[str, datetime, str, str]]:
    return [(e.replica, e.t, e.outcome, e.detail) for e in fleet.events if e.event == "tick"]


def test_instants_play_in_virtual_time_order_and_a_lone_tick_is_not_held(lab, monkeypatch):
    fleet = play(monkeypatch, {T0 + MINUTE: ["A"], T0: ["B"]})
    assert [w for w in lab.said if w[1] != "spawn"] == [
        ("B", "tick hold=False crash="), ("A", "tick hold=False crash="), ("A", "stop"),
        ("B", "stop")]
    assert fleet.instants == [(1, T0), (2, T0 + MINUTE)]
    assert ticks(fleet) == [("B", T0, "ok", ""), ("A", T0 + MINUTE, "ok", "")]


def test_same_instant_ticks_each_hold_before_any_is_released(lab, monkeypatch):
    """The barrier: every tick of the instant is held before its COMMIT, then all go on."""
    fleet = play(monkeypatch, {T0: ["A", "B"]})
    assert [w for w in lab.said if w[1] not in ("spawn", "stop")] == [
        ("A", "tick hold=True crash="), ("B", "tick hold=True crash="), ("A", "release"),
        ("B", "release")]
    assert [(op.process, op.type, op.f) for op in fleet.history.ops_in_order()
            if op.f is F.COMMIT] == [("A", Type.OK, F.COMMIT), ("B", Type.OK, F.COMMIT)]


def test_a_tick_blocked_on_anothers_lock_finishes_once_that_one_commits(lab, monkeypatch):
    lab.blocked_by["B"] = "A"
    fleet = play(monkeypatch, {T0: ["A", "B"]})
    assert [w for w in lab.said if w[1] not in ("spawn", "stop")] == [
        ("A", "tick hold=True crash="), ("B", "tick hold=True crash="), ("A", "release"),
        ("B", "release")]
    assert [(op.process, op.f) for op in fleet.history.ops if op.f is F.BLOCK] == [("B", F.BLOCK)]
    assert [(e.replica, e.event, e.detail) for e in fleet.events if e.event == "blocked"] == [
        ("B", "blocked", "waits for an advisory lock replica A holds")]
    assert [(e.replica, e.event) for e in fleet.events if e.event != "held"] == [
        ("A", "tick"), ("B", "tick"), ("B", "blocked")]


def test_a_tick_a_fault_keeps_held_goes_on_when_the_fault_resumes_it(lab, monkeypatch):
    """The other replica's tick ends in its instant; the kept one ends at the resume, and a
    tick due on it meanwhile is skipped."""
    fleet = play(monkeypatch, {T0: ["A", "B"], T0 + 2 * MINUTE: ["A"]},
                 Fault("keep", T0, "A"))
    assert ticks(fleet) == [
        ("B", T0, "ok", ""), ("A", T0 + 2 * MINUTE, "skipped", "paused: it does not run"),
        ("A", T0 + 5 * MINUTE, "ok", "began 18:00:00, went on at 18:05:00")]
    assert [w for w in lab.said if w[1] not in ("spawn", "stop")] == [
        ("A", "tick hold=True crash="), ("B", "tick hold=True crash="), ("B", "release"),
        ("A", "resume"), ("A", "release")]
    assert fleet.never_applied() == []
    assert fleet.kept == {}


def test_a_fault_that_lets_the_held_tick_go_untouched_has_not_acted(lab, monkeypatch):
    fault = Fault("let-go", T0, "A")
    fleet = play(monkeypatch, {T0: ["A"]}, fault)
    assert ticks(fleet) == [("A", T0, "ok", "")]
    why = LetGo().why_not_applied(fault, fleet.s)
    assert fleet.never_applied() == [(fault, why)]
    assert fleet.events[-1] == Event(T0 + 60 * MINUTE, HARNESS, "fault",
                                     f"let-go on A at Fri 18:00:00 never applied: {why}")


def test_a_tick_whose_replica_is_killed_leaves_the_instant_and_never_ends(lab, monkeypatch):
    fleet = play(monkeypatch, {T0: ["A", "B"]}, Fault("kill", T0, "A"))
    assert [w for w in lab.said if w[1] not in ("spawn", "stop")] == [
        ("A", "tick hold=True crash="), ("B", "tick hold=True crash="), ("A", "kill"),
        ("A", "start"), ("B", "release")]
    assert [(op.process, op.type) for op in fleet.history.ops if op.f is F.TICK] == [
        ("A", Type.INVOKE), ("B", Type.INVOKE), ("B", Type.OK)]
    assert fleet.never_applied() == []


def test_a_tick_an_interrupt_leaves_held_goes_on_after_it(lab, monkeypatch):
    fleet = play(monkeypatch, {T0: ["A"]}, Fault("look", T0, "A"))
    assert [w for w in lab.said if w[1] not in ("spawn", "stop")] == [
        ("A", "tick hold=True crash="), ("A", "release")]
    assert ticks(fleet) == [("A", T0, "ok", "")]
    assert [e.detail for e in fleet.events if e.event == "fault"] == ["look: A is held"]
    assert fleet.never_applied() == []


def test_a_seam_fault_is_armed_in_one_process_at_a_time_until_it_fires(lab, monkeypatch):
    """Armed in A at 18:00 it does not fire (A's job never reaches the seam); at 18:01 it is
    armed in the first process again, B, fires there, and is armed no more."""
    lab.crashes.add("B")
    fleet = play(monkeypatch, {T0: ["A"], T0 + MINUTE: ["B", "A"], T0 + 2 * MINUTE: ["A"]},
                 Fault("seam", T0))
    assert [w for w in lab.said if w[1].startswith("tick")] == [
        ("A", "tick hold=False crash=seam"), ("B", "tick hold=True crash=seam"),
        ("A", "tick hold=True crash="), ("A", "tick hold=False crash=")]
    assert [e.detail for e in fleet.events if e.event == "fault"] == [
        "armed seam at Fri 18:00:00 in A", "armed seam at Fri 18:00:00 in B"]
    assert fleet.never_applied() == []
