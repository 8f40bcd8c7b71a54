"""The property suite: in every generated scenario the fixed stages pay each slot exactly once,
and the same search finds the duplicates the earlier stages exist to show."""

from __future__ import annotations

import tomllib
from datetime import timedelta

import pytest
from hypothesis import given, settings

from harness.engine.model import stages
from harness.engine.model.clock import tick_plan
from harness.engine.model.scenario import from_dict, to_dict
from harness.engine.run import runner
from harness.tracks.cron import search
from tests.helpers import racelab, racelab_json

FIXED = [s for s in stages.stages_of("cron") if s.id >= "03"]
SLOT = search.SLOT.isoformat()


def _scenario(**fields) -> search.Scenario:
    data = {"name": "t", "start": search.START.isoformat(), "end": search.END.isoformat(),
            **fields}
    return from_dict(data, "t")


@pytest.mark.slow
@pytest.mark.parametrize("stage", FIXED, ids=[s.id for s in FIXED])
def test_fixed_stage_pays_each_slot_exactly_once_in_every_generated_scenario(pg, stage):
    """No duplicate, the ledger matches the runs, and no slot is missed while an attempt could
    succeed, over every generated scenario of the profile (200 in ci)."""
    tried: list[search.Scenario] = []

    @given(search.cron_scenarios(search.fault_kinds(stage)))
    def keeps_its_promise(s):
        tried.append(s)
        assert search.broken_promises(stage, s, runner.run(stage, s).verdict) == []

    keeps_its_promise()
    assert len(tried) == settings().max_examples
    used = {f.kind for s in tried for f in s.faults}
    assert used == {k.name for k in search.fault_kinds(stage)}


@pytest.mark.slow
def test_search_finds_stage_00_paying_twice_for_two_simultaneous_replicas(pg):
    """Stage 00 has no guard at all: the shrunk race is two replicas ticking at one instant."""
    found = search.find_race(stages.resolve("00"), max_examples=30)
    shrunk = {k: v for k, v in to_dict(found.scenario).items() if k != "description"}
    assert shrunk == to_dict(_scenario(name="race-00", replicas=2, offsets=["0s", "0s"],
                                       skew=["0s", "0s"], seed=0))
    assert (found.result.verdict.runs, found.result.verdict.duplicates) == (2, 1)


@pytest.mark.slow
def test_find_race_shrinks_stage_01_to_two_replicas_ticking_one_after_the_other(pg, tmp_path):
    """`racelab find-race 01`: the lock is released at COMMIT, so B a minute later pays again;
    the scenario is written to a file the user can run again, and its timeline is shown."""
    out_file = tmp_path / "race.toml"
    out = racelab("find-race", "01", "--max-examples", "30", "--out", str(out_file),
                  env={"COLUMNS": "400"})  # the path twice on one line (xdist's are longer)
    assert out.returncode == 0, out.stderr
    data = tomllib.loads(out_file.read_text())
    assert (data["replicas"], data["offsets"], data["skew"], data.get("faults")) == (
        2, ["0s", "1m"], ["+0s", "+0s"], None)
    assert (f"wrote {out_file}; run it again with: .venv/bin/racelab run 01 --scenario "
            f"{out_file}") in out.stdout
    timeline = [line.strip() for line in out.stdout.splitlines() if " replica " in line]
    paid = [line.split(" tick ")[0].strip() for line in timeline if "3 coin credits" in line]
    assert paid == ["T+15m Fri 18:00:00 replica A", "T+16m Fri 18:01:00 replica B"]
    again = racelab("run", "01", "--scenario", str(out_file), "--json")
    assert (racelab_json(again)["runs"], racelab_json(again)["duplicates"]) == (2, 1)


@pytest.mark.slow
def test_find_race_finds_stage_02_paying_again_when_the_summary_silently_fails(pg, tmp_path):
    """`racelab find-race 02 --json --out race.toml`, run in the user's folder: the sentinel
    thread is never written without the "general" section, so a second replica pays again.
    Both the TOML written and the JSON printed replay the race; no .hypothesis/ is left."""
    out = racelab("find-race", "02", "--max-examples", "30", "--json", "--out", "race.toml",
                  cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["race.toml"]
    (tmp_path / "found.json").write_text(out.stdout)
    for replay in ("race.toml", "found.json"):
        again = racelab("run", "02", "--scenario", str(tmp_path / replay), "--json")
        assert racelab_json(again)["duplicates"] == 1, again.stderr
    data = racelab_json(out)
    assert set(data) == {"stage", "found", "examples", "scenario", "counts", "broken"}
    s = data["scenario"]
    assert (data["stage"], data["found"]) == ("02-thread-sentinel", True)
    assert (s["replicas"], s["offsets"], s["faults"]) == (2, ["0s", "1m"],
                                                          [{"kind": "section-missing"}])
    assert data["counts"] == {"runs": 2, "expected": 1, "duplicates": 1, "missed": 0,
                              "partial": 1, "coins": {"expected": 30, "paid": 60}}
    assert from_dict(s, "json").name == "race-02"


@pytest.mark.slow
def test_find_race_reports_nothing_for_stage_03_within_its_budget(pg, tmp_path):
    """`racelab find-race 03`: the claim row holds in every scenario tried; exit 0, no file."""
    out = racelab("find-race", "03", "--max-examples", "20", "--out", str(tmp_path / "r.toml"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("nothing found: stage 03 kept its promise")
    assert "in 20 scenarios" in out.stdout
    assert not (tmp_path / "r.toml").exists()


def test_find_race_refuses_an_alerts_stage_in_one_line():
    """find-race searches cron scenarios (and a project's, --project DIR); an alerts stage is
    bad input (exit 2)."""
    out = racelab("find-race", "alerts-00")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == "racelab: find-race searches the cron and project tracks; stage " \
                         "alerts-00 is on the alerts track\n"


# can_succeed decides when a miss is a broken promise; these pin it down without a database.
STAGE_03 = stages.resolve("03")


def test_a_slot_can_succeed_when_one_replica_ticks_in_the_window_unharmed():
    """Staggered replicas, no faults: the first in-window tick pays."""
    s = _scenario(replicas=3, offsets=["0s", "1m", "2m"])
    assert search.can_succeed(STAGE_03, s) is True


def test_a_slot_cannot_be_promised_when_its_only_attempt_is_killed():
    """One replica, killed in its only tick that reads the window: a miss is allowed."""
    s = _scenario(replicas=1, offsets=["0s"],
                  faults=[{"kind": "kill-mid-tick", "replica": "A", "at": SLOT}])
    assert search.can_succeed(STAGE_03, s) is False


def test_a_kill_spent_before_the_window_leaves_the_attempt_standing():
    """The kill at 17:45 takes A's 17:45 tick; its 18:00 tick still pays."""
    s = _scenario(replicas=1, offsets=["0s"],
                  faults=[{"kind": "kill-mid-tick", "replica": "A",
                           "at": search.START.isoformat()}])
    assert search.can_succeed(STAGE_03, s) is True


def test_a_crash_reaches_the_first_attempt_after_its_time_and_only_that_one():
    """One crash against two attempts leaves one; two crashes against two leave none."""
    crash = {"kind": "crash-after-first-write", "at": search.START.isoformat()}
    two = {"replicas": 2, "offsets": ["0s", "1m"]}
    assert search.can_succeed(STAGE_03, _scenario(**two, faults=[crash])) is True
    assert search.can_succeed(STAGE_03, _scenario(**two, faults=[crash, crash])) is False


def test_a_slow_clock_reaches_the_window_on_its_next_tick():
    """A reads 17:58:30 at 18:00 and 18:13:30 at 18:15: the second tick is an attempt."""
    s = _scenario(replicas=1, offsets=["0s"], skew=["-90s"])
    ticks = [t.now.strftime("%H:%M:%S") for t in tick_plan(s)
             if search.in_window(t.now)]
    assert ticks == ["18:13:30"]
    assert search.can_succeed(STAGE_03, s) is True


def test_an_instant_shared_with_a_replica_outside_the_window_is_no_promise():
    """A (in the window) and B (90 s slow) tick together: B may take the lock and skip."""
    s = _scenario(replicas=2, offsets=["15m", "15m"], skew=["0s", "-90s"], interval="30m")
    assert [(t.t - search.START, search.in_window(t.now)) for t in tick_plan(s)] == [
        (timedelta(minutes=15), True), (timedelta(minutes=15), False)]
    assert search.can_succeed(STAGE_03, s) is False
