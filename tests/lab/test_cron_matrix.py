"""The cron track's matrix, stage by stage, exactly as STORY.md tells it."""

from __future__ import annotations

import pytest

from tests.helpers import run

# (stage, scenario) -> (runs, duplicates, missed, partial slots, coins paid)
MATRIX = {
    ("00", "simultaneous"): (3, 2, 0, 0, 90),
    ("00", "staggered"): (3, 2, 0, 0, 90),
    ("00", "silent-failure"): (3, 2, 0, 1, 90),
    ("00", "crash-after-claim"): (2, 1, 0, 0, 60),
    ("01", "simultaneous"): (1, 0, 0, 0, 30),
    ("01", "staggered"): (3, 2, 0, 0, 90),
    ("01", "silent-failure"): (3, 2, 0, 1, 90),
    ("01", "crash-after-claim"): (2, 1, 0, 0, 60),
    ("02", "simultaneous"): (1, 0, 0, 0, 30),
    ("02", "staggered"): (1, 0, 0, 0, 30),
    ("02", "silent-failure"): (3, 2, 0, 1, 90),
    ("02", "crash-after-claim"): (1, 0, 0, 0, 30),
    ("03", "simultaneous"): (1, 0, 0, 0, 30),
    ("03", "staggered"): (1, 0, 0, 0, 30),
    ("03", "silent-failure"): (1, 0, 0, 1, 30),
    ("03", "crash-after-claim"): (1, 0, 0, 0, 30),
}


@pytest.mark.parametrize(("stage", "name"), list(MATRIX), ids=[f"{s}-{n}" for s, n in MATRIX])
def test_matrix_cell_matches_the_story(pg, stage, name):
    """Each stage pays the Friday slot exactly as many times as the story says it did."""
    v = run(stage, name).verdict
    assert (v.runs, v.duplicates, v.missed, v.partial, v.coins_paid) == MATRIX[(stage, name)]
    assert v.coins_expected == 30
    assert v.expected == 1


def test_stage_00_pays_three_times_under_staggered_ticks(pg):
    """The incident itself: replicas A, B and C each reach the window and each pay +10."""
    r = run("00", "staggered")
    assert [s.runs for s in r.verdict.slots] == [3]
    payers = [e.replica for e in r.events
              if e.event == "write" and "token_transactions" in e.detail]
    assert payers == ["A", "B", "C"]


def test_stage_01_does_not_prevent_duplicates_when_ticks_are_staggered(pg):
    """The advisory lock is released at COMMIT, so every later tick takes it and pays again."""
    r = run("01", "staggered")
    locks = [e.detail for e in r.events if e.event == "lock"]
    assert locks == ["true", "true", "true"]
    assert r.verdict.runs == 3


def test_stage_01_lets_one_of_three_simultaneous_ticks_pay(pg):
    """Ticks at the same instant overlap; one replica holds the lock, the other two skip."""
    r = run("01", "simultaneous")
    assert sorted(e.detail for e in r.events if e.event == "lock") == ["false", "false", "true"]
    assert r.verdict.runs == 1


def test_stage_02_pays_again_when_the_summary_thread_silently_fails(pg):
    """post_thread returns None without the section: no sentinel, every tick pays."""
    r = run("02", "silent-failure")
    assert [e.detail for e in r.events if e.event == "sentinel"] == ["absent"] * 3
    assert r.verdict.runs == 3


def test_stage_03_commits_the_payout_without_its_summary_under_silent_failure(pg):
    """The claim row stops the repeats; the missing thread is committed with it (partial)."""
    slot = run("03", "silent-failure").verdict.slots[0]
    assert (slot.runs, slot.partial, slot.why) == (1, True, "no summary thread")


def test_stage_03_retries_a_crashed_claim_on_the_next_tick(pg):
    """A raises after claiming: the claim rolls back with the work, B claims and pays, C skips."""
    r = run("03", "crash-after-claim")
    claims = [(e.replica, e.detail) for e in r.events if e.event == "claim"]
    assert claims == [("A", "true"), ("B", "true"), ("C", "false")]
    assert [(e.replica, e.outcome) for e in r.events if e.event == "tick"] == [
        ("A", "failed"), ("B", "ok"), ("C", "ok")]
    assert (r.verdict.runs, r.verdict.missed) == (1, 0)


DUPLICATING = [cell for cell, counts in MATRIX.items() if counts[1] > 0]


@pytest.mark.slow
@pytest.mark.parametrize(("stage", "name"), DUPLICATING,
                         ids=[f"{s}-{n}" for s, n in DUPLICATING])
def test_every_bug_reproduces_on_every_run(pg, stage, name):
    """Twenty runs of a duplicating cell give the same count twenty times: no luck involved."""
    counts = [run(stage, name, seed=seed).verdict.runs for seed in range(20)]
    assert counts == [MATRIX[(stage, name)][0]] * 20
