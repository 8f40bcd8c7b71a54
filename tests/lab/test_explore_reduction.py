"""The reduction (`explore --strategy dpor`) on real stages: the same outcomes as the full
bounded search at the same bound, from far fewer runs, on 00, 02 without its lock, 03 and two
mutants of 03; and without a bound where the full search has no end."""

from __future__ import annotations

import pytest

from tests.helpers import (
    copy_02_without_its_lock,
    copy_stage_edited,
    one_line_exit_2,
    own_lock_keys,
    racelab_here,
    racelab_json,
)


def _explore(stage: str, *args: str) -> dict:
    data = racelab_json(racelab_here("explore", stage, "--json", *args))
    assert data["complete"] and data["unreached"] == []
    return data


def _outcomes(data: dict) -> set[str]:
    return {o["outcome"] for o in data["outcomes"]}


def _without_lock_02(tmp_path) -> str:
    return str(copy_02_without_its_lock(tmp_path))


def _own_keys(folder) -> str:
    return str(own_lock_keys(folder))


def _select_then_insert(tmp_path) -> str:
    """03 whose claim reads first and inserts plainly, its lock excluding no one."""
    return _own_keys(copy_stage_edited(
        tmp_path, "03-select-then-insert", "runs.py",
        '"INSERT INTO worker_runs (name, key) VALUES (:name, :key) "\n'
        '    "ON CONFLICT (name, key) DO NOTHING RETURNING 1"',
        '"INSERT INTO worker_runs (name, key) SELECT :name, :key WHERE NOT EXISTS ("\n'
        '    "SELECT 1 FROM worker_runs WHERE name = :name AND key = :key) RETURNING 1"'))


def _minute_claim(tmp_path) -> str:
    """03 whose claim key is the minute, not the week, its lock excluding no one: every
    replica claims a key of its own tick's minute, so all ticking at 18:00 share one."""
    return _own_keys(copy_stage_edited(
        tmp_path, "03-minute-claim", "leaderboard.py",
        'claim_run(db, "leaderboard_close", key)',
        'claim_run(db, "leaderboard_close", f"{now:%Y-%m-%d %H:%M}")'))


@pytest.mark.parametrize(("stage", "bound"), [
    pytest.param("00", "1", marks=pytest.mark.slow), ("02-no-lock", "1"),
    pytest.param("03", "2", marks=pytest.mark.slow), ("select-then-insert", "1"),
    pytest.param("minute-claim", "1", marks=pytest.mark.slow)])
def test_the_reduction_finds_the_outcomes_of_the_full_search_from_fewer_runs(stage, bound,
                                                                             tmp_path, pg):
    folder = {"02-no-lock": _without_lock_02, "select-then-insert": _select_then_insert,
              "minute-claim": _minute_claim}.get(stage, lambda _: stage)(tmp_path)
    full = _explore(folder, "--replicas", "2", "--preemptions", bound)
    reduced = _explore(folder, "--replicas", "2", "--preemptions", bound, "--strategy", "dpor")
    assert _outcomes(reduced) == _outcomes(full)
    assert reduced["schedules"] < full["schedules"]
    assert reduced["classes"] + reduced["sleep_blocked"] == reduced["schedules"]
    assert set(reduced["explored"]) <= set(full["explored"])


def test_03_with_three_replicas_and_no_bound_pays_once_in_every_class(pg):
    """The full search has no end without a bound (1,056 schedules at 2 preemptions); the
    reduction covers every interleaving in at most 60 runs (36 in each run on 2026-12-06), and
    at 2 preemptions in a tenth of the full search's (42). How many it takes can change with
    the order the runs end in, so the bounds are the README's, not one count."""
    data = _explore("03", "--replicas", "3", "--preemptions", "all", "--strategy", "dpor")
    assert data["preemptions"] == "all"
    assert _outcomes(data) == {"1 payout"}
    assert data["schedules"] == data["classes"] <= 60
    bounded = _explore("03", "--replicas", "3", "--preemptions", "2", "--strategy", "dpor")
    assert _outcomes(bounded) == {"1 payout"} and bounded["schedules"] <= 1056 // 10


def test_02_without_its_lock_pays_twice_in_some_class(tmp_path, pg):
    """On two workers: the reduction's runs end in either order, its classes found all the
    same."""
    data = racelab_json(racelab_here("explore", str(_without_lock_02(tmp_path)), "--json",
                                     "--replicas", "2", "--preemptions", "all",
                                     "--strategy", "dpor", env={"RACELAB_JOBS": "2"}))
    assert data["complete"] and data["unreached"] == []
    assert data["duplicates_or_misses"] and "2 payouts" in _outcomes(data)


def test_no_bound_is_the_reductions_alone_and_shares_the_full_searchs(pg):
    one_line_exit_2(racelab_here("explore", "03", "--preemptions", "all"),
                    "--preemptions all", "--strategy dpor")
    one_line_exit_2(racelab_here("explore", "03", "--strategy", "dpor", "--partition", "1/2"),
                    "--partition is an option of --strategy dfs")


@pytest.mark.slow
def test_03_with_four_replicas_at_two_preemptions_completes(pg):
    data = _explore("03", "--replicas", "4", "--preemptions", "2", "--strategy", "dpor")
    assert _outcomes(data) == {"1 payout"} and data["schedules"] < 1000  # the README's bound
