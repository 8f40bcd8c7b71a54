"""A read replica that lags (issue 40, part 5): the run's PostgreSQL is a primary with a real
hot standby of its own, whose replay stands still from 18:00 (§: how long it lags is the lab's
choice). Stage 02 reads its sentinel on the primary and pays once; detour 08, the same app with
that one read on the standby, pays three times. Counted from the primary's database."""

from __future__ import annotations

import re
import subprocess
import sys

import psycopg
import pytest

from harness.engine.model import scenario as scenarios
from harness.engine.model import stages
from harness.engine.run import fleet, runner
from harness.fault_tools.standby import StandbyPair, wait_replayed
from harness.infra import cleanup, embedded
from tests.helpers import (
    DEADLINE_S,
    ROOT,
    _own_dirs,
    alive,
    marked_cell,
    one_line_exit_2,
    racelab_here,
    racelab_json,
    racelab_pid,
    wait_for,
)

DETOUR = "detours-08"
LSN = re.compile(r"^[0-9A-F]+/[0-9A-F]+$")


cell = marked_cell


def test_the_sentinel_read_on_a_lagging_standby_pays_three_times_and_on_the_primary_once(pg):
    assert cell("02", "replica-lag") == "1"
    assert cell(DETOUR, "replica-lag") == "3 §"
    result = runner.run(stages.resolve(DETOUR), scenarios.resolve("replica-lag", "detours"))
    read = [(e.replica, e.detail) for e in result.events if e.event == "sentinel"]
    assert read == [("A", "absent"), ("B", "absent"), ("C", "absent")]
    # the advisory lock lets each tick in, one after another: it is free at each
    assert [e.detail for e in result.events if e.event == "lock"] == ["true"] * 3
    # the read on the standby is no transaction of the run's: each tick ends at its COMMIT
    assert [e.event for e in result.events if e.event in ("commit", "rollback")] == ["commit"] * 3
    paused = [op for op in result.history.ops_in_order()
              if op.process == "replica-lag" and op.type.value == "ok"]
    assert len(paused) == 1  # the standby's positions, in the run's history
    value = paused[0].value
    assert LSN.match(value["primary_wal"]) and LSN.match(value["standby_replayed_wal"])


def test_without_a_replica_the_detour_is_stage_02(pg):
    """No DATABASE_REPLICA_URL: the read stays on the primary, and every other scenario pays as
    02 does."""
    for name in ("staggered", "simultaneous"):
        assert cell(DETOUR, name) == cell("02", name), name


def test_the_standby_stands_still_while_the_primary_goes_on(pg):
    """The pair itself: after the pause a row the primary commits is not on the standby; the
    standby has received WAL it has not applied."""
    pair = StandbyPair("test")
    try:
        with psycopg.connect(pair.url, autocommit=True) as conn:
            conn.execute("CREATE TABLE t (x int)")
        pair.pause_replay()
        with psycopg.connect(pair.url, autocommit=True) as conn:
            conn.execute("INSERT INTO t VALUES (1)")
        with psycopg.connect(pair.standby.url, autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 0
            assert conn.execute("SELECT pg_is_in_recovery()").fetchone()[0] is True
        written, applied = pair.positions()
        assert written != applied
    finally:
        pair.close()
    assert pair.primary is None and pair.standby is None


def test_a_replica_lag_run_leaves_no_server_and_no_directory(pg):
    """The primary and the standby are the run's own: both gone when it ends, and so is the
    cluster their data dirs were copied from (in the memory-backed dir where there is one)."""
    out, pid = racelab_pid("run", DETOUR, "--scenario", "replica-lag", "--json")
    assert racelab_json(out)["runs"] == 3
    assert _own_dirs(pid) == []
    assert [d for root in cleanup.roots() for d in root.glob(f"{cleanup.TEMP_PREFIX}*")
            if (cleanup._read_owner(d) or {}).get("owner") == pid] == []


def test_the_standby_streams_from_a_copy_of_the_primarys_cluster():
    """Both data dirs are copies of one cluster made once per process (in memory where the
    machine has a tmpfs with room): the standby applies what the primary commits."""
    pair, again = StandbyPair("test"), StandbyPair("test")
    try:
        assert pair.primary.workdir.parent == (cleanup._memory_dir() or pair.primary.workdir.parent)
        assert len(embedded._templates) == 1  # the second pair copied the same cluster
        with psycopg.connect(pair.primary.url, autocommit=True) as conn:
            conn.execute("CREATE TABLE t (x int)")
            conn.execute("INSERT INTO t VALUES (7)")
            conn.execute("CHECKPOINT")  # asynchronous commits: flushed, so it is streamed
            flushed = conn.execute("SELECT pg_current_wal_flush_lsn()::text").fetchone()[0]
        with psycopg.connect(pair.standby.url, autocommit=True) as conn:
            wait_replayed(conn, flushed)
            assert conn.execute("SELECT x FROM t").fetchall() == [(7,)]
            assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
    finally:
        pair.close()
        again.close()


@pytest.mark.xdist_group("racelab-clean")  # clean drops what any dead run left
def test_sigkill_mid_run_leaves_neither_server_running_and_clean_removes_their_dirs(pg):
    """SIGKILL the harness once both servers are up: the primary and the standby die with it,
    and `racelab clean` removes the temp dirs it could not."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", DETOUR, "--scenario",
                             "replica-lag"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    servers = wait_for(lambda: (found := [(p, d["pid"]) for p, d in _own_dirs(proc.pid)
                                          if d["program"] == "postgres"]) and len(found) == 2
                       and found, "the run to start its primary and standby")
    proc.kill()
    proc.communicate(timeout=DEADLINE_S)
    for _, postmaster in servers:
        wait_for(lambda pm=postmaster: not alive(pm), "each postmaster to die with its harness")
    out = racelab_here("clean")
    assert out.returncode == 0, out.stderr
    for path, _ in servers:
        assert not path.exists(), path


def test_explore_says_it_cannot_play_it_in_one_line(pg):
    out = racelab_here("explore", "02", "--scenario", "replica-lag")
    one_line_exit_2(out, "replica-lag", "server of its own", "use racelab run")


def test_after_a_refused_exploration_a_run_in_the_same_process_plays(pg):
    """The refusal comes from one of the exploration's workers, which stops the others. Once
    all have stopped, a run in the same process (a test's, the pytest plugin's) plays to its
    end: it once stopped at its first instant, as on Ctrl-C, and took the test process down."""
    one_line_exit_2(racelab_here("explore", "02", "--scenario", "replica-lag"), "replica-lag")
    assert not fleet.STOP.is_set()
    result = runner.run(stages.resolve("02"), scenarios.resolve("simultaneous", "cron"))
    assert (result.verdict.runs, result.verdict.expected) == (1, 1)


def test_keep_on_a_run_with_a_server_of_its_own_is_refused_in_one_line(pg):
    out = racelab_here("run", DETOUR, "--scenario", "replica-lag", "--keep")
    one_line_exit_2(out, "--keep", "server of its own")


def test_a_second_replica_lag_finds_the_standby_already_standing_still(pg, tmp_path):
    """Listed twice, the fault stops the replay once: the second finds it stopped and says
    where (it once waited for a catch-up that could not come)."""
    text = (ROOT / "harness/tracks/cron/scenarios/replica-lag.toml").read_text()
    path = tmp_path / "twice.toml"
    path.write_text(text + '\n[[faults]]\nkind = "replica-lag"\nat = "2026-05-29T18:01:00-06:00"\n')
    data = racelab_json(racelab_here("run", "02", "--scenario", str(path), "--json"))
    assert data["runs"] == 1
    lags = [e["detail"] for e in data["events"] if e["detail"].startswith("replica-lag")]
    assert len(lags) == 2 and all("stands still at WAL" in d for d in lags)
