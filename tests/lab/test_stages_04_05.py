"""Stages 04 (one job path) and 05 (a scheduler outside the replicas), and the job CLI."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from datetime import timedelta

import psycopg
import pytest
from rich.console import Console

from harness.engine.model import scenario, stages
from harness.engine.model.faults import Fault, kind_of
from harness.engine.run import replica, runner
from harness.engine.run.cells import applies
from harness.engine.views import tables
from harness.infra import owned, services
from harness.schedulers import eventbridge_scheduler
from harness.tracks.cron import world as fixtures

CRON = scenario.canonical("cron")
CELLS = [(st, sc.name) for st in ("04", "05") for sc in CRON
         if applies(stages.resolve(st), sc)]
SILENT = {"silent-failure"}  # the summary thread is never written: 1 partial slot, by design
# 05's task crashed after its RunTask call succeeded: the scheduler does not run it again
CRASHED_TASK = ("05", "crash-after-claim")
CELLS.remove(CRASHED_TASK)
# a cleanup deleted 04's claim before its slot's late start (tests/lab/test_field_faults.py)
CELLS.remove(("04", "claim-cleanup"))
# the close never comes the night the clocks skip its hour: every stage misses the week
# (tests/lab/test_dst.py)
CELLS.remove(("04", "dst-spring-forward"))
CELLS.remove(("05", "dst-spring-forward"))
# an asynchronous standby promoted without 04's claim: it pays again
# (tests/lab/test_standby_failover.py)
CELLS.remove(("04", "standby-failover"))


@pytest.mark.parametrize(("stage", "name"), [
    pytest.param(st, n, id=f"{st}-{n}", marks=[pytest.mark.slow] if n == "week" else [])
    for st, n in CELLS])
def test_stages_04_and_05_pay_exactly_once_in_every_cron_scenario(pg, stage, name):
    """However the replicas tick, crash, restart, get delivered twice or refused a RunTask
    call, the slot pays once (05's crashed task aside: see below; and 04 once its claim is
    deleted before a late start, or lost in a failover: claim-cleanup and standby-failover,
    field faults of their own)."""
    v = runner.run(stages.resolve(stage), scenario.resolve(name)).verdict
    partial = 1 if name in SILENT else 0
    assert (v.runs, v.duplicates, v.missed, v.partial, v.coins_paid) == (1, 0, 0, partial, 30)


def test_double_delivery_is_not_applicable_to_stages_without_a_scheduler():
    """Stages 00-04 have no scheduler to deliver twice: the matrix shows "—" for them."""
    dd = scenario.resolve("double-delivery")
    applicable = [st.id for st in stages.stages_of("cron") if applies(st, dd)]
    assert [kind_of(f).applies_to(stages.resolve("04")) for f in dd.faults] == [False]
    assert applicable == ["05"]


def test_running_double_delivery_on_a_stage_without_a_scheduler_is_bad_input(pg):
    """`racelab run 04 --scenario double-delivery` says why in one line and exits 2."""
    out = subprocess.run([sys.executable, "-m", "harness.cli", "run", "04", "--scenario",
                          "double-delivery"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1
    assert "needs a stage whose jobs a scheduler starts" in out.stderr


def _tasks(result: runner.RunResult) -> list[tuple[str, str]]:
    return [(e.replica, e.outcome) for e in result.events if e.event == "task"]


def _claims(result: runner.RunResult) -> list[tuple[str, str]]:
    return [(e.replica, e.detail) for e in result.events if e.event == "claim"]


def test_stage_05_pays_once_when_the_scheduler_delivers_a_slot_twice(pg):
    """Two tasks for one slot insert the same claim row at once: one pays, one finds it."""
    r = runner.run(stages.resolve("05"), scenario.resolve("double-delivery"))
    assert _tasks(r) == [("task-1", "ok"), ("task-2", "ok")]
    assert _claims(r) == [("task-1", "true"), ("task-2", "false")]
    assert [e.replica for e in r.events if e.event == "blocked"] == ["task-2"]
    assert (r.verdict.runs, r.verdict.duplicates, r.verdict.missed) == (1, 0, 0)


def test_stage_05_does_not_run_again_a_task_that_crashed_after_its_claim_and_misses(pg):
    """As EventBridge Scheduler does: the RunTask call succeeded, the task then raised after
    claiming and rolled back; the scheduler does not start it again, so the slot is missed."""
    r = runner.run(stages.resolve("05"), scenario.resolve("crash-after-claim"))
    assert _tasks(r) == [("task-1", "failed")]
    assert _claims(r) == [("task-1", "true")]
    assert [e.event for e in r.events if e.replica == "scheduler"] == ["deliver", "task-failed"]
    assert (r.verdict.runs, r.verdict.duplicates, r.verdict.missed) == (0, 0, 1)


def test_stage_05_retries_a_refused_runtask_call_and_pays_once(pg):
    """The first RunTask call is refused (throttled): no task starts; the call is made again a
    minute later, that task claims and pays."""
    r = runner.run(stages.resolve("05"), scenario.resolve("runtask-refused"))
    assert _tasks(r) == [("task-2", "ok")]
    assert [(e.t.strftime("%H:%M:%S"), e.event) for e in r.events
            if e.replica == "scheduler"] == [("18:00:20", "retry"), ("18:01:20", "deliver")]
    assert (r.verdict.runs, r.verdict.duplicates, r.verdict.missed) == (1, 0, 0)


def test_stage_05_misses_a_slot_whose_retries_run_out_and_dead_letters_it(pg):
    """Every RunTask call is refused (1 + 3 retries): no task ever starts, and the slot goes
    to the dead-letter record, unpaid."""
    base = scenario.resolve("runtask-refused")
    refused = base.faults[0]
    s = replace(base, name="retries-exhausted",
                faults=tuple(Fault(refused.kind, refused.at) for _ in range(4)))
    r = runner.run(stages.resolve("05"), s)
    assert _tasks(r) == []
    letters = [e.detail for e in r.events if e.event == "dead-letter"]
    assert letters == ["leaderboard_close for 2026-05-30T00:00:00Z gave up after 4 attempts "
                       "→ dead-letter queue"]
    assert (r.verdict.runs, r.verdict.missed, r.verdict.coins_paid) == (0, 1, 0)


# Where the emulator's timing is the lab's own: AWS documents no cold start (the first post puts
# it at 15-30 s; the lab's task starts 20 s after the fire time) and retries with exponential
# backoff (the lab, a minute after a refused call). Each pair is a point AWS could pick instead.
TIMINGS = [(timedelta(seconds=15), timedelta(seconds=30)), (timedelta(seconds=30),
                                                            timedelta(minutes=8))]
TIMED = ["double-delivery", "runtask-refused", "crash-after-claim", "pause", "kill-mid-tick",
         "deploy-restart", "clock-skew"]


def _counts(r: runner.RunResult) -> tuple[int, int, int, int, int]:
    v = r.verdict
    return (v.runs, v.duplicates, v.missed, v.partial, v.coins_paid)


@pytest.mark.parametrize(("cold_start", "retry_after"), TIMINGS,
                         ids=[f"cold-{c.seconds}s-retry-{r.seconds}s" for c, r in TIMINGS])
def test_stage_05_counts_the_same_whatever_cold_start_and_retry_delay_the_scheduler_has(
        pg, monkeypatch, cold_start, retry_after):
    """No cell of 05 rests on the emulator's 20 s cold start or its one-minute retry: with
    either anywhere AWS might put it, every count is the matrix's (so none is marked)."""
    st = stages.resolve("05")
    expected = {name: _counts(runner.run(st, scenario.resolve(name))) for name in TIMED}
    monkeypatch.setattr(eventbridge_scheduler, "COLD_START", cold_start)
    monkeypatch.setattr(eventbridge_scheduler, "RETRY_AFTER", retry_after)
    moved = {name: runner.run(st, scenario.resolve(name)) for name in TIMED}
    slot = scenario.resolve("double-delivery").faults[0].at
    starts = [e.t - slot for e in moved["double-delivery"].events if e.event == "deliver"]
    retried = [e.t - slot for e in moved["runtask-refused"].events if e.event == "deliver"]
    assert (starts, retried) == ([cold_start] * 2, [cold_start + retry_after])
    assert {name: _counts(r) for name, r in moved.items()} == expected


def test_stage_00_still_pays_twice_when_its_first_tick_crashes_after_a_write(pg):
    """crash-after-claim names no replica now; on 00 it still hits A's tick, as before."""
    r = runner.run(stages.resolve("00"), scenario.resolve("crash-after-claim"))
    assert [(e.replica, e.outcome) for e in r.events if e.event == "tick"] == [
        ("A", "failed"), ("B", "ok"), ("C", "ok")]
    assert r.verdict.runs == 2


# --- the job CLI, run by hand -------------------------------------------------------------------

STAGE_04 = stages.resolve("04").path


@pytest.fixture
def stage04_url(pg):
    """A fresh database with stage 04's schema and the seeded community, dropped afterwards."""
    name = f"{services.DB_PREFIX}test_jobs_cli_{id(object())}"
    owned.create(pg.url, name)
    url = services.app_url(pg.url, name)
    with psycopg.connect(services.libpq_url(url)) as conn:
        for statement in replica.schema_ddl(STAGE_04):
            conn.execute(statement)
        conn.commit()
        fixtures.seed(conn, scenario.resolve("staggered"))
    yield url
    owned.drop(pg.url, name)


def _jobs_cli(*args: str, url: str = "") -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", **({"DATABASE_URL": url} if url else {})}
    return subprocess.run([sys.executable, "-m", "myapp.jobs", *args], capture_output=True,
                          text=True, timeout=60, cwd=STAGE_04, env=env)


def test_running_leaderboard_close_twice_by_hand_pays_once(stage04_url):
    """The second run of the same slot finds the claim row and says so; coins land once."""
    now = "2026-05-29T18:00:00-06:00"
    first = _jobs_cli("leaderboard_close", "--now", now, url=stage04_url)
    second = _jobs_cli("leaderboard_close", "--now", now, url=stage04_url)
    assert (first.returncode, second.returncode) == (0, 0)
    assert first.stdout == (f"leaderboard_close at {now}: slot 2026-W22 claimed: "
                            "paid 3 members 10 coins, posted summary\n")
    assert second.stdout == f"leaderboard_close at {now}: slot 2026-W22 already claimed; " \
                            "nothing to do\n"
    with psycopg.connect(services.libpq_url(stage04_url)) as conn:
        paid = conn.execute("SELECT count(*), sum(amount) FROM token_transactions").fetchone()
        claims = conn.execute("SELECT name, key FROM worker_runs").fetchall()
    assert paid == (3, 30)
    assert claims == [("leaderboard_close", "2026-W22")]


def test_a_late_run_in_utc_serves_the_same_slot_as_the_scheduled_time(stage04_url):
    """--now in UTC on Saturday is converted to Mexico City and still closes week 2026-W22."""
    first = _jobs_cli("leaderboard_close", "--now", "2026-05-30T00:00:00Z", url=stage04_url)
    late = _jobs_cli("leaderboard_close", "--now", "2026-05-30T15:30:00+00:00", url=stage04_url)
    assert first.stdout.startswith("leaderboard_close at 2026-05-29T18:00:00-06:00: slot "
                                   "2026-W22 claimed")
    assert late.stdout == ("leaderboard_close at 2026-05-30T09:30:00-06:00: slot 2026-W22 "
                           "already claimed; nothing to do\n")


def test_a_run_before_friday_serves_last_weeks_close_not_the_coming_one(stage04_url):
    """Started on Thursday, the job serves the latest close (W21) and leaves W22 to its slot."""
    early = _jobs_cli("leaderboard_close", "--now", "2026-05-28T12:00:00-06:00", url=stage04_url)
    on_time = _jobs_cli("leaderboard_close", "--now", "2026-05-29T18:00:00-06:00",
                        url=stage04_url)
    assert early.stdout.startswith("leaderboard_close at 2026-05-28T12:00:00-06:00: slot "
                                   "2026-W21 claimed")
    assert on_time.stdout.startswith("leaderboard_close at 2026-05-29T18:00:00-06:00: slot "
                                     "2026-W22 claimed")


def test_an_unknown_job_lists_the_known_ones_and_exits_2():
    """A typo in the job name is bad input: one line naming the jobs there are."""
    out = _jobs_cli("leaderbord_close")
    assert out.returncode == 2
    assert out.stderr == ("error: unknown job 'leaderbord_close'; known jobs: "
                          "leaderboard_close, zombie_threads\n")


def test_a_now_without_an_offset_is_refused_with_exit_2():
    """A naive --now could mean any zone; the CLI asks for an offset instead of guessing."""
    out = _jobs_cli("leaderboard_close", "--now", "2026-05-29T18:00:00")
    assert out.returncode == 2
    assert out.stderr == ("error: --now: '2026-05-29T18:00:00' has no UTC offset; "
                          "write e.g. 2026-05-29T18:00:00-06:00\n")


def test_a_failing_job_exits_1_with_one_line_and_rolls_back(pg):
    """No database to reach: the job fails, says so in one line, and exits 1."""
    out = _jobs_cli("zombie_threads", "--now", "2026-05-29T18:00:00-06:00",
                    url=services.app_url(pg.url, f"{services.DB_PREFIX}does_not_exist"))
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1
    assert out.stderr.startswith("error: zombie_threads at 2026-05-29T18:00:00-06:00 failed "
                                 "and was rolled back: OperationalError")


def test_matrix_columns_keep_the_canonical_order_when_the_first_stage_lacks_one(pg):
    """A scenario the first stage does not run still gets its canonical column, "—" where absent."""
    results = [runner.run(stages.resolve(st), scenario.resolve(name))
               for st, name in [("04", "staggered"), ("05", "simultaneous"), ("05", "staggered")]]
    table = tables.matrix_table(results, "matrix")
    assert [c.header for c in table.columns] == ["stage", "simultaneous", "staggered"]
    console = Console(record=True, width=100)
    console.print(table)
    rows = [line for line in console.export_text().splitlines() if "-cli-" in line]
    assert rows == ["│ 04-cli-entrypoint │            — │         1 │"]
