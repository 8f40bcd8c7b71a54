"""The same seed and scenario replay the same run: the same event log and the same counts."""

from __future__ import annotations

from datetime import datetime

import pytest

from harness.engine.model import clock, scenario, stages
from harness.engine.model.faults import restart_times
from harness.engine.model.scenario import Scenario, from_dict
from harness.engine.run import runner
from harness.tracks.cron.search import END, START


def _history(result: runner.RunResult) -> list[dict]:
    """Everything a run reports but its wall-clock duration."""
    return [e.to_json() for e in result.events]


def _busy() -> Scenario:
    """Four replicas, two of them at the same instant, a deploy, a kill and a crash."""
    return from_dict({
        "name": "busy", "replicas": 4, "start": START.isoformat(), "end": END.isoformat(),
        "offsets": ["0s", "0s", "1m", "7m"], "skew": ["0s", "+30s", "-50s", "0s"], "seed": 3,
        "faults": [
            {"kind": "deploy-restart", "at": "2026-05-29T18:05:00-06:00"},
            {"kind": "kill-mid-tick", "replica": "A", "at": "2026-05-29T18:00:00-06:00"},
            {"kind": "crash-after-first-write", "at": "2026-05-29T17:50:00-06:00"},
        ],
    }, "busy")


@pytest.mark.parametrize(("stage", "name"), [("01", "simultaneous"), ("00", "kill-mid-tick"),
                                             ("03", "busy")])
def test_same_seed_and_scenario_give_the_same_events_and_counts_run_after_run(pg, stage, name):
    """Three runs of one scenario and seed: identical event logs, identical verdicts."""
    s = _busy() if name == "busy" else scenario.resolve(name)
    runs = [runner.run(stages.resolve(stage), s) for _ in range(3)]
    assert [_history(r) for r in runs[1:]] == [_history(runs[0])] * 2
    assert [r.verdict for r in runs[1:]] == [runs[0].verdict] * 2


@pytest.mark.parametrize("seed", range(6))
def test_the_seed_decides_which_simultaneous_replica_takes_the_lock(pg, seed):
    """Stage 01, three ticks at one instant: the replica the seed dispatches first wins."""
    s = scenario.resolve("simultaneous").with_seed(seed)
    first = clock.instants(clock.tick_plan(s, restart_times(s)), seed)[0][1][0].replica
    r = runner.run(stages.resolve("01"), s)
    winners = [e.replica for e in r.events if e.event == "lock" and e.detail == "true"]
    assert winners == [first]


@pytest.mark.parametrize(("stage", "name"), [("detours-07", "pause"), ("01", "pause"),
                                             ("detours-01", "failover")])
def test_a_process_s_ops_never_go_back_in_virtual_time(pg, stage, name):
    """Ops are in one total order; along it each process's virtual time only moves on. A tick
    that waited on a held row from one instant to a later one took its first steps (the lock,
    the BEGIN, the statement it waited in) when it began, not when it went on."""
    st = stages.resolve(stage)
    history, _ = runner.run(st, scenario.resolve(name, st.track)).history.to_json()
    last: dict[str, dict] = {}
    back = []
    for op in history:
        prev = last.get(op["process"])
        if prev and datetime.fromisoformat(op["t"]) < datetime.fromisoformat(prev["t"]):
            back.append((prev["index"], op["index"], op["process"]))
        last[op["process"]] = op
    assert back == []
    if stage == "detours-07":
        began = {op["process"]: op["t"][11:19] for op in history
                 if op["f"] == "lock" and op["type"] == "invoke"}
        assert began == {"A": "18:00:00", "B": "18:01:00", "C": "18:02:00"}
