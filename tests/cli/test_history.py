"""A run's history as data (`racelab run … --json`: history[] and states[]), read the way the
next tools will read it: intervals paired, one total order, the shared state after each commit."""

from __future__ import annotations

from types import SimpleNamespace

from harness.engine.model import registry, scenario, stages
from harness.engine.run import runner
from harness.engine.views import run_views
from tests.helpers import of_process, racelab, racelab_json


def run_json(stage: str, scenario: str) -> dict:
    out = racelab("run", stage, "--scenario", scenario, "--json")
    assert out.returncode == 0, out.stderr
    return racelab_json(out)


def test_03_staggered_pays_30_after_the_first_commit_and_no_more():
    data = run_json("03", "staggered")
    coins = [s["value"]["coins_paid"] for s in data["states"]]
    assert coins == [30, 30, 30]
    claims = [op["value"]["result"] for op in data["history"]
              if op["f"] == "claim" and op["type"] == "ok"]
    assert claims == [True, False, False]
    commits = {op["index"] for op in data["history"] if op["f"] == "commit" and op["type"] == "ok"}
    assert all(s["after"] in commits for s in data["states"])


def test_the_crash_is_the_faults_op_between_the_claim_and_the_rollback():
    """03 × crash-after-claim: the first job to write a payout row raises right after its claim;
    the history shows the claim, then the fault's crash, then the replica's rollback."""
    history = run_json("03", "crash-after-claim")["history"]
    crash = [op for op in history if op["f"] == "crash"]
    assert [(op["process"], op["type"]) for op in crash] == [
        ("crash-after-first-write", "invoke"), ("crash-after-first-write", "ok")]
    assert crash[0]["value"] == {"after": "INSERT", "table": "worker_runs"}
    claim = [op for op in of_process(history, "A", "claim") if op["type"] == "ok"]
    rollback = of_process(history, "A", "rollback")
    assert claim[0]["value"]["result"] is True
    assert claim[0]["index"] < crash[0]["index"] < crash[1]["index"] < rollback[0]["index"]
    assert not of_process(history, "A", "commit")  # it never reached its COMMIT
    assert [op["type"] for op in of_process(history, "A", "tick")] == ["invoke", "fail"]


def test_a_run_reads_the_shared_state_only_for_a_view_that_shows_it(pg):
    """The state after each commit is one more query per commit: a run shown as its table or
    timeline, or a matrix cell, leaves it out and counts the same; the JSON, the picture and the
    page read it, as does a plugin's view that does not say (registry.READS_STATES)."""
    views = registry.views()
    assert not run_views.reads_states([views[""], views["timeline"]])
    assert all(run_views.reads_states([views[name]]) for name in ("json", "svg", "html"))
    assert run_views.reads_states([views[""], SimpleNamespace(name="mine")])
    stage, s = stages.resolve("03"), scenario.resolve("staggered", "cron")
    read, unread = runner.run(stage, s), runner.run(stage, s, states=False)
    assert read.history.states[-1].value["coins_paid"] == 30
    assert unread.history.states == []
    assert unread.verdict == read.verdict
    assert [(op.process, op.f) for op in unread.history.ops_in_order()] == [
        (op.process, op.f) for op in read.history.ops_in_order()]
