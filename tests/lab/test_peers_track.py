"""The peers track through the harness, as a user runs it: each library's failures in the
records, and the pause fault on the fixed cron stages and on the TTL-lock peer. Every cell of the
peers' matrix is compared with the README by tests/lab/test_readme.py; these read the same
cached runs (tests.helpers.run) and check how each cell came about."""

from __future__ import annotations

import pytest

from harness.engine.model import scenario
from harness.engine.views import picture_columns, pictures
from tests.helpers import run

APSCHEDULER, PROCRASTINATE, RQ = "peers-01", "peers-02", "peers-03"


def _at(result, replica: str, hm: str, event: str) -> list[str]:
    """The details of `event` entries logged by `replica` at HH:MM (true virtual time)."""
    return [e.detail for e in result.events
            if e.replica == replica and f"{e.t:%H:%M}" == hm and e.event == event]


def test_peers_run_the_cron_scenarios_with_the_replicas_up_one_interval_earlier():
    cron = {s.name: s for s in scenario.canonical("cron")}
    peers = scenario.canonical("peers")
    # all but claim-cleanup, replica-lag and standby-failover, faults of the cron track's own
    # (the stages' claim table; a server of the run's own), and the DST ones, which configure
    # the stages' app (a library's schedule is set in its own code)
    assert [s.name for s in peers] == [name for name in cron if name not in (
        "claim-cleanup", "dst-fall-back", "dst-spring-forward", "replica-lag",
        "standby-failover")] + [
        "visibility-redelivery"]  # the track's own (tests/lab/test_visibility_redelivery.py)
    for s in peers[:-1]:
        assert (s.track, s.start, s.faults) == ("peers", cron[s.name].start - s.interval,
                                                cron[s.name].faults)
    staggered, own = peers[peers.index(next(s for s in peers if s.name == "staggered"))], peers[-1]
    assert (own.start, own.end, own.offsets, own.interval) == (
        staggered.start, staggered.end, staggered.offsets, staggered.interval)


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


def test_apscheduler_paused_replica_runs_the_job_on_resuming_within_its_misfire_grace(pg):
    """B and C, held together, pay at 18:00; A, stopped inside its due-job read, goes on at
    18:05 with the job it read and runs it: the peer's 15-minute misfire_grace_time (the
    library's default is 1 s) and A's tick, which began at 18:00:00, let the late run through."""
    result = run(APSCHEDULER, "pause")
    assert (result.verdict.runs, result.verdict.duplicates) == (3, 2)
    paid = [(e.replica, f"{e.t:%H:%M}") for e in result.events
            if e.event == "write" and "token_transactions" in e.detail]
    assert sorted(paid) == [("A", "18:05"), ("B", "18:00"), ("C", "18:00")]
    assert [e.detail for e in result.events if e.replica == "A" and e.event == "tick"
            and f"{e.t:%H:%M}" == "18:05"] == ["began 18:00:00, went on at 18:05:00"]


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


CELERY_BEAT, REDBEAT = "peers-04", "peers-05"
SENDING = "info: Scheduler: Sending due task leaderboard_close (myapp.tasks.leaderboard_close)"


def _paid(result) -> list[tuple[str, str]]:
    """(replica, HH:MM) of each tick that wrote coin credits."""
    return [(e.replica, f"{e.t:%H:%M}") for e in result.events
            if e.event == "write" and "token_transactions" in e.detail]


def test_celery_beat_in_every_replica_sends_the_slot_from_each_and_pays_three_times(pg):
    """Staggered loops do not stagger beat: each replica's beat, booted at 17:45, 17:46 and
    17:47, asked to wake at 18:00; each one's own schedule said the slot was due, each sent the
    task, and each replica's worker paid it."""
    result = run(CELERY_BEAT, "staggered")
    assert (result.verdict.runs, result.verdict.duplicates) == (3, 2)
    for name in "ABC":
        assert _at(result, name, "18:00", "log") == [SENDING]
    assert sorted(_paid(result)) == [("A", "18:00"), ("B", "18:00"), ("C", "18:00")]


def test_celery_beat_does_not_send_a_failed_task_again(pg):
    """crash-after-claim: A's task raises after its first write and rolls back; beat had
    already moved the entry on, so nothing sends it again; B's and C's own sends pay: 2."""
    result = run(CELERY_BEAT, "crash-after-claim")
    assert (result.verdict.runs, result.verdict.missed) == (2, 0)
    assert sorted(_paid(result)) == [("B", "18:00"), ("C", "18:00")]


def test_redbeat_one_beat_holds_the_lock_and_sends_the_slot_once(pg):
    """A, first to start, takes RedBeat's lock at 17:45; B and C find it taken and try again
    every 5 minutes (the lock's sleep is beat's max interval); only A sends: 1."""
    result = run(REDBEAT, "staggered")
    assert (result.verdict.runs, result.verdict.duplicates) == (1, 0)
    assert _at(result, "A", "17:45", "log") == ["info: beat: Acquired lock"]
    for name, tries in (("B", ("17:46", "17:51", "17:56", "18:01")),
                        ("C", ("17:47", "17:52", "17:57", "18:02"))):
        for hm in tries:
            assert _at(result, name, hm, "log") == ["info: beat: lock taken; trying again in 300 s"]
    assert _at(result, "A", "18:00", "log") == [SENDING]
    assert _paid(result) == [("A", "18:00")]


def test_redbeat_pause_shorter_than_its_lock_timeout_pays_once(pg):
    """A stands still from 18:00 to 18:05 inside its tick (the due entry read, not yet sent),
    holding the lock it extended to 25 minutes at 18:00: the lock never runs out, B and C keep
    finding it taken, and A sends and pays when it goes on: 1."""
    result = run(REDBEAT, "pause")
    assert (result.verdict.runs, result.verdict.duplicates, result.verdict.missed) == (1, 0, 0)
    assert [e for e in result.events if e.event == "expired"] == []
    assert _paid(result) == [("A", "18:05")]
    assert _at(result, "A", "18:05", "held") == [
        "before RedBeatScheduler.maybe_due while the fault strikes"]


def test_redbeat_beat_killed_with_the_lock_keeps_the_others_out_past_the_slot(pg):
    """A is killed inside its tick at 18:00, before it sent the task: its lock, extended to 25
    minutes at 18:00, outlives the run's end at 18:15, so B and C find it taken at every try
    and nobody sends the slot: 0, 1 missed."""
    result = run(REDBEAT, "kill-mid-tick")
    assert (result.verdict.runs, result.verdict.missed) == (0, 1)
    assert [e for e in result.events if e.event == "expired"] == []
    for name, hm in (("B", "18:01"), ("C", "18:02"), ("B", "18:11"), ("C", "18:12")):
        assert _at(result, name, hm, "log") == ["info: beat: lock taken; trying again in 300 s"]


def test_the_redbeat_picture_draws_the_dead_beats_lock_held_past_the_slot(pg):
    """The picture of RedBeat's failure draws its lock from the history (peers/hooks.py): A takes
    it at 17:45 with its 25-minute lease and holds it as a bar to the run's end, through its own
    kill at 18:00 (the lease, extended at 18:00, would run out at 18:25); B's and C's refusals
    point at A, marked the first time and again after the kill, the ones between folded into
    quiet ticks."""
    drawn = pictures.drawn(run(REDBEAT, "kill-mid-tick"))
    shown = [drawn.steps[pos] for col in picture_columns.columns(drawn) if col.t_end is None
             for pos in col.steps]  # a fold of quiet instants shows no words
    decided = [(s.process, f"{s.t:%H:%M}", label) for s in shown for label in s.labels
               if label.startswith("lock")]
    assert decided == [("A", "17:45", "lock ✓ (Redis, lease 25 min)"),
                       ("B", "17:46", "lock ✗ A holds the lock"),
                       ("C", "17:47", "lock ✗ A holds the lock"),
                       ("B", "18:01", "lock ✗ A holds the lock"),
                       ("C", "18:02", "lock ✗ A holds the lock")]
    [held] = [iv for iv in drawn.intervals if iv.f == "lock"]
    assert (held.process, held.end, held.how) == ("A", None, "ok")
    assert f"{drawn.ops[held.start].t:%H:%M}" == "17:45"


def test_redbeat_does_not_send_a_failed_task_again(pg):
    """crash-after-claim: A, the lock's holder, sends the slot at 18:00 and its task raises and
    rolls back; RedBeat had written the entry's last run before sending, so no beat sends it
    again: 0, 1 missed."""
    result = run(REDBEAT, "crash-after-claim")
    assert (result.verdict.runs, result.verdict.missed) == (0, 1)
    sent = [(e.replica, f"{e.t:%H:%M}") for e in result.events if e.detail == SENDING]
    assert sent == [("A", "18:00")]


def test_redbeat_clean_stop_at_a_deploy_releases_the_lock_to_the_fresh_process(pg):
    """deploy-restart: A pays at 18:00; replaced at 18:05, it stops cleanly (RedBeat's close
    releases the lock) and the fresh A takes the lock at once; B and C, replaced too, wait."""
    result = run(REDBEAT, "deploy-restart")
    assert (result.verdict.runs, result.verdict.duplicates) == (1, 0)
    assert _at(result, "A", "18:05", "log") == ["info: beat: Acquired lock"]
    assert _at(result, "B", "18:06", "log") == ["info: beat: lock taken; trying again in 300 s"]


def test_the_claim_row_under_redbeat_misses_what_redbeat_misses(pg):
    """Peer 06 is 05 with stage 04's claim row: a beat killed holding the lock, or a failed task
    that nobody sends again, still leaves the slot unpaid; the claim stops only a second run."""
    for name in ("kill-mid-tick", "crash-after-claim"):
        result = run("peers-06", name)
        assert (result.verdict.runs, result.verdict.missed) == (0, 1), name
