"""The same seed and scenario replay the same run: the same event log and the same counts."""

from __future__ import annotations

import pytest

from harness.engine import clock, runner, scenario, stages
from harness.engine.faults import restart_times
from harness.engine.scenario import Scenario, from_dict
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
