"""The peers track through the harness, as a user runs it: each library's failures in the
records, and the pause fault on the fixed cron stages and on the TTL-lock peer. Every cell of the
peers' matrix is compared with the README by tests/lab/test_readme.py; these read the same
cached runs (tests.helpers.run) and check how each cell came about."""

from __future__ import annotations

import pytest

from harness.engine import scenario
from tests.helpers import run

APSCHEDULER, PROCRASTINATE, RQ = "peers-01", "peers-02", "peers-03"


def _at(result, replica: str, hm: str, event: str) -> list[str]:
    """The details of `event` entries logged by `replica` at HH:MM (true virtual time)."""
    return [e.detail for e in result.events
            if e.replica == replica and f"{e.t:%H:%M}" == hm and e.event == event]


def test_peers_run_the_cron_scenarios_with_the_replicas_up_one_interval_earlier():
    cron = {s.name: s for s in scenario.canonical("cron")}
    peers = scenario.canonical("peers")
    assert [s.name for s in peers] == list(cron)
    for s in peers:
        assert (s.track, s.start, s.faults) == ("peers", cron[s.name].start - s.interval,
                                                cron[s.name].faults)


def test_apscheduler_replicas_all_wake_at_the_fire_time_and_all_run_the_job(pg):
    """Staggered loops do not stagger APScheduler: every replica asked its timer for 18:00,
    read the shared job store before any moved next_run_time, and ran the job."""
    result = run(APSCHEDULER, "staggered")
    assert (result.verdict.runs, result.verdict.duplicates) == (3, 2)
    for name, boot in zip("ABC", ("17:45", "17:46", "17:47"), strict=True):
        assert _at(result, name, boot, "wakeup") == ["2026-05-29T18:00:00-06:00"]
        assert any(d.startswith('info: Running job "leaderboard_close') for d in
                   _at(result, name, "18:00", "log"))


def test_apscheduler_moves_the_job_before_it_runs_so_a_crash_is_not_retried(pg):
    """crash-after-claim: A's job raises and rolls back (its tick still ends ok: the executor
    caught it); B and C had read the store together with A and pay, twice."""
    result = run(APSCHEDULER, "crash-after-claim")
    assert (result.verdict.runs, result.verdict.missed) == (2, 0)
    assert any("raised an exception" in d for d in _at(result, "A", "18:00", "log"))


def test_procrastinate_and_rq_record_a_crashed_run_as_done_and_miss_the_slot(pg):
    for peer in (PROCRASTINATE, RQ):
        v = run(peer, "crash-after-claim").verdict
        assert (v.runs, v.missed) == (0, 1), peer


@pytest.mark.parametrize("stage", ["03", "04", "05"])
def test_fixed_stage_paused_inside_its_transaction_pays_once(pg, stage):
    """A stands still from 18:00 to 18:05 with its transaction open; B and C skip or wait on
    its locks; it goes on at 18:05 and the slot is paid once, nothing missed."""
    result = run(stage, "pause")
    v = result.verdict
    assert (v.runs, v.duplicates, v.missed) == (1, 0, 0)
    assert _at(result, "harness", "18:05", "fault") == ["pause: SIGCONT replica A"]
    assert "COMMIT" in [e.event.upper() for e in result.events
                        if e.replica == "A" and f"{e.t:%H:%M}" == "18:05"]


def test_the_bug_pays_three_times_under_pause(pg):
    assert run("00", "pause").verdict.runs == 3


def test_rq_scheduler_pass_paused_past_its_lock_ttl_pays_twice(pg):
    """A stands still inside its pass (the lock held, the due job read, not yet queued). B's
    passes at 18:00 and 18:01 find the lock taken; by 18:02 the lock's 70 s ran out in virtual
    time, C takes it and pays; A goes on at 18:05 believing it still holds the lock, queues the
    job it read, and pays again."""
    result = run(RQ, "pause")
    assert (result.verdict.runs, result.verdict.duplicates) == (2, 1)
    assert "warning: Lock already taken - skipping run" in _at(result, "B", "18:01", "log")
    assert _at(result, "redis", "18:02", "expired") == [
        "rq:scheduler_lock: its TTL ran out in virtual time"]
    paid = [(e.replica, f"{e.t:%H:%M}") for e in result.events
            if e.event == "write" and "token_transactions" in e.detail]
    assert paid == [("C", "18:02"), ("A", "18:05")]


def test_procrastinate_paused_worker_keeps_its_job_and_pays_once(pg):
    """procrastinate holds no TTL: the paused worker's job stays 'doing', the others' deferrals
    conflict on the defer row, and A pays when it goes on."""
    result = run(PROCRASTINATE, "pause")
    assert (result.verdict.runs, result.verdict.duplicates, result.verdict.missed) == (1, 0, 0)
    paid = [e.replica for e in result.events
            if e.event == "write" and "token_transactions" in e.detail]
    assert paid == ["A"]
