"""explore's sampling strategies, random walks and PCT: seeded, so one seed takes the same
schedules on every exploration, each replayable with `run --schedule`; PCT states its bound."""

from __future__ import annotations

import pytest

from tests.helpers import racelab_here, racelab_json

STRATEGIES = {
    "random": ("--walks", "4", "--walk-seed", "3"),
    "pct": ("--runs", "4", "--depth", "2", "--pct-seed", "3"),
}


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_a_sampling_strategy_takes_the_same_schedules_for_one_seed_and_each_replays(pg, name):
    """4 schedules of 00 with 2 replicas, twice with one seed: the same 4, every one paying
    twice (00 has no guard), the first replayed by run --schedule to the same 2 payouts."""
    args = ("explore", "00", "--replicas", "2", "--strategy", name, *STRATEGIES[name], "--json")
    first, again = racelab_json(racelab_here(*args)), racelab_json(racelab_here(*args))
    assert (first["strategy"], first["schedules"]) == (name, 4)
    assert first["explored"] == again["explored"]
    assert [(o["outcome"], o["bad"], o["schedules"]) for o in first["outcomes"]] == [
        ("2 payouts", True, 4)]
    for schedule in sorted(set(first["explored"]))[:1]:
        replay = racelab_json(racelab_here("run", "00", "--scenario", "simultaneous", "--replicas",
                                           "2", "--schedule", schedule, "--json"))
        assert (replay["schedule"], replay["runs"]) == (schedule, 2)


def test_pct_states_its_bound_from_the_steps_and_processes_it_counted(pg):
    """PCT over 03 with 2 replicas: k is the steps of the schedule without preemption (the
    dfs tree's first schedule), n the 2 replicas; the bound 1/(n·k^(d-1)) for d = 2, and over
    the runs 1 - (1 - p)^runs, in the JSON and in the printed heading; 03 pays once in each."""
    dfs = racelab_json(racelab_here("explore", "03", "--replicas", "2", "--preemptions", "0",
                                    "--json"))
    unpreempted = min(dfs["explored"])  # the default choice at every step: A first, none preempted
    found = racelab_json(racelab_here("explore", "03", "--replicas", "2", "--strategy", "pct",
                                      "--runs", "4", "--json"))
    k = len(unpreempted.replace(" ", ""))
    assert (found["processes"], found["steps"], found["depth"]) == (2, k, 2)
    assert found["bound"] == round(1 / (2 * k), 6)
    assert found["bound_over_runs"] == round(1 - (1 - 1 / (2 * k)) ** 4, 6)
    assert [(o["outcome"], o["bad"]) for o in found["outcomes"]] == [("1 payout", False)]
    printed = racelab_here("explore", "03", "--replicas", "2", "--strategy", "pct", "--runs", "1")
    assert f"PCT's bound for n = 2 processes, k = {k} steps" in printed.stdout


def test_a_depth_or_count_out_of_range_is_one_line_and_exit_2():
    """--depth 0, --runs 0 and --walks x are refused before anything runs."""
    for args in (("--strategy", "pct", "--depth", "0"), ("--strategy", "pct", "--runs", "0"),
                 ("--strategy", "random", "--walks", "x")):
        out = racelab_here("explore", "00", *args)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
