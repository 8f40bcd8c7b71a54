"""explore with waiters that race: with 3 replicas, which waiter PostgreSQL lets through first
when a COMMIT frees a row is a branch of the search, recorded in the schedule and forced on
replay (by running again until it goes that way). Checked against an enumeration that shares
no code with the explorer (tests.helpers.model_schedules), on 00 and on a copy of 03 whose
claim is a DO UPDATE and whose lock excludes no one."""

from __future__ import annotations

import json
import os

import pytest

from tests.helpers import (
    copy_stage_edited,
    model_schedules,
    own_lock_keys,
    racelab_here,
    racelab_json,
    statements_of,
)

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"  # `make thorough`
ZOMBIES = {"UPDATE threads": True}  # 00's UPDATE of the open zombie threads
CLAIMS = {"UPDATE threads": True, "INSERT INTO worker_runs": False}  # and a DO UPDATE claim


def _explore(stage: str, *args: str) -> dict:
    data = racelab_json(racelab_here("explore", stage, "--json", "--replicas", "3",
                                     "--preemptions", "1", *args))
    assert data["complete"] and data["unreached"] == [], data["unreached"]
    assert len(data["explored"]) == len(set(data["explored"]))
    return data


def _model(stage: str, locks: dict[str, bool]) -> set[str]:
    played = racelab_json(racelab_here("run", stage, "--scenario", "simultaneous",
                                       "--replicas", "3", "--schedule", "A", "--json"))
    return model_schedules(statements_of(played), locks, 1)


def _do_update_copy(tmp_path):
    folder = copy_stage_edited(tmp_path, "03-do-update", "runs.py",
                               '"ON CONFLICT (name, key) DO NOTHING RETURNING 1"',
                               '"ON CONFLICT (name, key) DO UPDATE SET ran_at = now() RETURNING 1"')
    return own_lock_keys(folder)  # each replica's lock key its own: no one excluded


RACED = ["A" * 11 + "B" * 11 + "C" * 11 + "ACB", "A" * 11 + "B" * 11 + "C" * 11 + "ABC"]


@pytest.mark.parametrize("schedule", RACED)
def test_a_schedule_after_a_race_between_waiters_replays_on_every_try(schedule, pg):
    """A's COMMIT lets B and C go (B waited on A's row, C queued behind B): in the first C
    goes on first, in the second B. Each replays three times of three (the first replayed
    2 times of 3, the third exiting 2 with "C is blocked: it waits for B")."""
    for _ in range(3):
        out = racelab_here("run", "00", "--scenario", "simultaneous", "--replicas", "3",
                           "--schedule", schedule, "--json")
        assert racelab_json(out)["schedule"] == schedule


@pytest.mark.slow
def test_00_with_three_replicas_explores_the_models_schedules(pg):
    """216 schedules at K=1, the model's (a run that missed a waiter's win gave 210, and two
    runs differed), the two raced schedules among them."""
    expected = _model("00", ZOMBIES)
    assert len(expected) == 216 and set(RACED) <= expected
    data = _explore("00")
    assert set(data["explored"]) == expected
    assert [o["outcome"] for o in data["outcomes"]] == ["3 payouts"]


@pytest.mark.slow
def test_a_do_update_claim_with_three_replicas_explores_the_models_schedules(tmp_path, pg):
    """The claim's waiters race at the first claimer's COMMIT (both are let go at once, and the
    one that updates the row first holds it): 384 schedules at K=1, the model's, whole in one
    run and in two shares merged."""
    folder = str(_do_update_copy(tmp_path))
    expected = _model(folder, CLAIMS)
    assert len(expected) == 384
    assert set(_explore(folder)["explored"]) == expected
    shares = []
    for i in (1, 2):
        data = _explore(folder, "--partition", f"{i}/2")
        (tmp_path / f"{i}.json").write_text(json.dumps(data))
        shares.append(str(tmp_path / f"{i}.json"))
    merged = racelab_json(racelab_here("explore", "--merge", *shares, "--json"))
    assert set(merged["explored"]) == expected and merged["schedules"] == 384


@pytest.mark.skipif(not THOROUGH, reason="five repetitions run in `make thorough`")
@pytest.mark.parametrize("stage", ["00", "03-do-update"])
def test_three_replicas_give_the_same_schedules_on_five_runs(stage, tmp_path, pg):
    folder = "00" if stage == "00" else str(_do_update_copy(tmp_path))
    expected = _model(folder, ZOMBIES if stage == "00" else CLAIMS)
    for _ in range(5):
        assert set(_explore(folder)["explored"]) == expected
