"""The lab's fault kinds against a fake run-control handle: what each one does to a run, in
order, through the handle alone (harness.engine.model.control)."""

from __future__ import annotations

import inspect
from datetime import datetime, timedelta
from types import SimpleNamespace

from harness.engine.model.control import RunControl
from harness.engine.model.history import F, Type
from harness.engine.model.scenario import TZ, Fault
from harness.engine.run.fleet_control import FleetControl
from harness.faults.pause import PAUSE, Pause
from harness.faults.process import DeployRestart, KillMidTick, TerminateBackend
from harness.tracks.alerts.faults import StuckJobFlood
from harness.tracks.detours.faults import HOLD, FailoverWhileHeld

T0 = datetime(2026, 5, 29, 18, 0, tzinfo=TZ)


class FakeControl:
    """Records every call a hook makes, as (method, replica or op) in order."""

    def __init__(self, kept: tuple[str, ...] = (), faults: tuple[Fault, ...] = ()):
        self.calls: list[tuple] = []
        self.kept = set(kept)
        self.faults = faults
        self.replica_names = ("A", "B")
        self.world = SimpleNamespace(fail_over=lambda: self._call("fail_over") or ["k"],
                                     flood=lambda i, t: self._call("flood", i) or t,
                                     flooded=set())

    def _call(self, *what) -> None:
        self.calls.append(what)

    def emit(self, process, type_, f, t, value=None):
        self._call("emit", type_, f)

    def abandon(self, replica, t, value):
        self._call("abandon", replica)

    def tell(self, event):
        self._call("tell", event.detail)

    def note(self, replica, event):
        self._call("note", replica, event.event)

    def note_after(self, replica, event):
        self._call("note_after", replica, event.event)

    def reconnect(self):
        self._call("reconnect")

    def is_kept(self, replica):
        return replica in self.kept

    def terminate_backend(self, replica):
        self._call("terminate_backend", replica)
        return 1

    def execute(self, statement, params=()):
        self._call("execute", statement)
        return 1

    def __getattr__(self, name):  # restart, kill, pause, keep_held, resume, release
        return lambda replica, *rest: self._call(name, replica)


def test_the_fleets_handle_has_every_method_of_the_protocol():
    wanted = {n for n, _ in inspect.getmembers(RunControl, inspect.isfunction)
              if not n.startswith("_")}
    assert wanted <= set(dir(FleetControl))
    assert set(FakeControl.__dict__) | {"restart", "kill", "pause", "keep_held", "resume",
                                        "release"} >= wanted


def test_kill_mid_tick_kills_abandons_and_restarts_the_held_replica():
    run = FakeControl()
    KillMidTick().interrupt(Fault("kill-mid-tick", T0, "A"), run, "A", T0)
    assert run.calls == [
        ("emit", Type.INVOKE, F.KILL), ("kill", "A"), ("emit", Type.OK, F.KILL),
        ("abandon", "A"), ("note", "A", "tick"), ("note", "A", "fault"),
        ("emit", Type.INVOKE, F.RESTART), ("restart", "A"), ("emit", Type.OK, F.RESTART)]


def test_terminate_backend_ends_the_connection_then_lets_the_replica_go_on():
    run = FakeControl()
    TerminateBackend().interrupt(Fault("terminate-backend", T0, "B"), run, "B", T0)
    assert run.calls == [
        ("emit", Type.INVOKE, F.TERMINATE), ("terminate_backend", "B"),
        ("emit", Type.OK, F.TERMINATE), ("note", "B", "fault"), ("release", "B")]


def test_deploy_restart_without_a_replica_replaces_every_one():
    run = FakeControl()
    events = DeployRestart().strike(Fault("deploy-restart", T0), run, T0)
    assert [c for c in run.calls if c[0] == "restart"] == [("restart", "A"), ("restart", "B")]
    assert [e.detail for e in events] == [f"deploy: replica {n} replaced by a fresh process"
                                          for n in "AB"]


def test_pause_stops_and_keeps_the_held_tick_then_resumes_it():
    fault, run = Fault("pause", T0, "A"), FakeControl()
    assert Pause().interrupt(fault, run, "A", T0) is None
    assert run.calls == [("emit", Type.INVOKE, F.PAUSE), ("pause", "A"),
                         ("emit", Type.OK, F.PAUSE), ("keep_held", "A"), ("note", "A", "fault")]
    run = FakeControl(kept=("A",))
    assert Pause().strike(fault, run, T0 + PAUSE) == []
    assert run.calls == [("tell", "pause: SIGCONT replica A"), ("emit", Type.INVOKE, F.RESUME),
                         ("resume", "A"), ("emit", Type.OK, F.RESUME)]


def test_a_pause_whose_replica_opened_no_transaction_in_time_lets_it_go_and_says_so():
    fault, run = Fault("pause", T0, "A"), FakeControl()
    assert Pause().interrupt(fault, run, "A", T0 + PAUSE) is False
    assert run.calls == [("release", "A")]
    events = Pause().strike(fault, run, T0 + PAUSE)
    assert run.calls[1:] == [("emit", Type.INFO, F.PAUSE)]
    assert [e.detail for e in events] == [
        "pause: replica A opened no transaction from 18:00:00 to 18:05:00; not paused"]


def test_failover_while_held_keeps_the_tick_open_over_the_failover():
    fault, run = Fault("failover-while-held", T0, "A"), FakeControl()
    assert FailoverWhileHeld().interrupt(fault, run, "A", T0) is True
    assert run.calls == [("keep_held", "A"), ("fail_over",), ("emit", Type.INVOKE, F.FAULT),
                         ("note", "A", "fault")]  # the promotion's op when it happens (T0)
    run = FakeControl(kept=("A",))
    FailoverWhileHeld().strike(fault, run, T0 + HOLD)
    assert run.calls == [("tell", "failover-while-held: A's transaction goes on"),
                         ("resume", "A"), ("emit", Type.OK, F.FAULT)]


def test_each_stuck_job_flood_of_a_scenario_floods_jobs_of_its_own():
    first, second = (Fault("stuck-job-flood", T0 + timedelta(hours=h)) for h in (2, 1))
    run = FakeControl(faults=(first, second))
    for f in (second, first):
        StuckJobFlood().strike(f, run, f.at)
    assert run.calls == [("flood", 1), ("flood", 0)]
    alike = Fault("stuck-job-flood", T0)  # two alike at one instant: two floods (issue 42, 12)
    run = FakeControl(faults=(alike, alike))
    for f in (alike, alike):
        StuckJobFlood().strike(f, run, f.at)
    assert run.calls == [("flood", 0), ("flood", 1)]
