"""The rest of the story's faults on every cron stage: a rolling deploy, a SIGKILL inside a
tick's transaction, and clocks that disagree around the slot."""

from __future__ import annotations

from datetime import datetime

import psycopg
import pytest

from harness.engine.model import scenario, stages
from harness.engine.model.scenario import TZ
from harness.engine.run import runner
from harness.infra import owned, services
from harness.schedulers.eventbridge_scheduler import template_of

CRON = [s.id for s in stages.stages_of("cron")]
FAULTY = ("deploy-restart", "kill-mid-tick", "clock-skew")
# Payouts landed for the Friday slot, by stage; stages from 03 on pay exactly once.
RUNS = {
    "deploy-restart": {"00": 3, "01": 3, "02": 1},  # every replica in the window, once each
    "kill-mid-tick": {"00": 2, "01": 2, "02": 1},  # A's payout dies with it; B and C pay
    "clock-skew": {"00": 3, "01": 3, "02": 1},  # B early, C on time, A a tick late
}


def _at(hms: str) -> datetime:
    return datetime.fromisoformat(f"2026-05-29T{hms}").replace(tzinfo=TZ)


@pytest.mark.parametrize("name", FAULTY)
@pytest.mark.parametrize("stage", CRON)
def test_fault_scenario_pays_as_often_as_the_story_says(pg, stage, name):
    """00–02 pay once per replica that reaches the window where the story says so; 03+ once."""
    v = runner.run(stages.resolve(stage), scenario.resolve(name)).verdict
    runs = RUNS[name].get(stage, 1)
    assert (v.runs, v.duplicates, v.missed, v.coins_paid) == (runs, runs - 1, 0, 30 * runs)


@pytest.mark.parametrize("stage", CRON)
def test_killed_tick_is_unknown_and_postgres_rolls_its_transaction_back(pg, stage):
    """A is SIGKILLed while its transaction is open: its tick ends "unknown" and none of its
    writes survive; only the later replicas' rows are in the database."""
    stage_ = stages.resolve(stage)
    result = runner.run(stage_, scenario.resolve("kill-mid-tick"), keep=True)
    try:
        url = services.libpq_url(services.app_url(pg.url, result.database))
        with psycopg.connect(url) as conn:
            credited = [row[0] for row in conn.execute(
                "SELECT DISTINCT created_at FROM token_transactions ORDER BY 1")]
            claims = conn.execute("SELECT count(*) FROM worker_runs").fetchone()[0] \
                if stage >= "03" else 0
    finally:
        owned.drop(pg.url, result.database)
    ticks = [(e.t, e.replica, e.outcome) for e in result.events if e.event == "tick"]
    assert ticks[0] == (_at("18:00:00"), "A", "unknown")
    faults = [e.detail for e in result.events if e.event == "fault"]
    assert faults == ["kill-mid-tick: SIGKILL replica A while its transaction is open"]
    if template_of(stage_.path) is None:  # the ticks pay: A's would have, at 18:00
        paid_at = [_at("18:01:00"), _at("18:02:00")] if stage < "02" else [_at("18:01:00")]
        assert credited == paid_at
    assert claims == (1 if stage >= "03" else 0)


def test_skewed_replica_enters_the_window_on_its_next_tick(pg):
    """A's clock is 40 s slow: at 18:00:20 it reads 17:59:40 and skips; it pays at 18:15:20,
    when it reads 18:14:40. The slot key still agrees: stage 03 finds B's claim."""
    r = runner.run(stages.resolve("03"), scenario.resolve("clock-skew"))
    claims = [(e.t, e.replica, e.detail) for e in r.events if e.event == "claim"]
    assert claims == [(_at("17:59:30"), "B", "true"), (_at("18:01:00"), "C", "false"),
                      (_at("18:15:20"), "A", "false")]
    readings = {e.t: e.detail for e in r.events if e.event == "tick" and e.replica == "A"}
    assert readings[_at("18:00:20")] == "its clock reads 17:59:40"
    assert [s.key for s in r.verdict.slots] == ["2026-W22"]


def test_a_paused_tick_says_when_it_began_and_the_ticks_behind_it_say_why_they_wait(pg):
    """pause on stage 03: A's tick resumes at 18:05 and says it began at 18:00 (not a skewed
    clock); B and C, held while A stands still, say so (not "while the fault strikes"); the
    pause is reported as applied."""
    result = runner.run(stages.resolve("03"), scenario.resolve("pause"))
    by = {(e.replica, e.event): e.detail for e in result.events if e.replica != "harness"}
    assert by[("A", "tick")] == "began 18:00:00, went on at 18:05:00"
    assert by[("B", "held")].endswith("while a paused replica stands still")
    assert by[("C", "held")].endswith("while a paused replica stands still")
    assert result.never_applied == ()
