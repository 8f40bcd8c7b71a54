"""The command line as a user meets it: JSON, timeline, bad input, Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psycopg

from harness.infra import services
from tests.helpers import (
    LONG_RUN,
    ROOT,
    alive,
    assert_one_total_order_with_every_lock_and_commit_paired,
    descendants,
    one_line_exit_2,
    racelab,
    racelab_here,
    racelab_json,
)

JSON_KEYS = {"stage", "track", "scenario", "seed", "replicas", "offsets", "slots", "runs",
             "faults", "marks", "expected", "duplicates", "missed", "partial", "coins", "events",
             "history", "states", "duration_s", "settings", "aborted", "aborted_not_retried"}


def test_run_json_has_the_documented_keys_and_counts(pg):
    """`racelab run 01 --scenario staggered --json` prints one object with exact counts."""
    out = racelab_here("run", "01", "--scenario", "staggered", "--json")
    assert out.returncode == 0, out.stderr
    data = racelab_json(out)
    assert set(data) == JSON_KEYS
    assert (data["stage"], data["scenario"], data["replicas"]) == ("01-advisory-lock",
                                                                    "staggered", 3)
    assert data["slots"] == [{"job": "leaderboard_close", "key": "2026-W22", "expected": 1,
                              "runs": 3, "duplicates": 2, "missed": 0, "partial": 0,
                              "received": {"notifications": {"landed": 9, "expected": 3},
                                           "coins": {"landed": 90, "expected": 30},
                                           "threads": {"landed": 3, "expected": 1}}}]
    assert data["coins"] == {"expected": 30, "paid": 90}
    assert {e["replica"] for e in data["events"]} == {"A", "B", "C"}
    assert data["marks"] == []  # 01 × staggered rests on nothing the lab chose
    assert (data["settings"], data["aborted"]) == ({"isolation": "read-committed"}, 0)
    assert_one_total_order_with_every_lock_and_commit_paired(data["history"])
    assert [s["value"]["coins_paid"] for s in data["states"]] == [30, 60, 90]


def test_timeline_shows_lock_claim_writes_and_commit_per_replica(pg):
    """The 03 staggered timeline reads as the story: A claims and pays, B and C find it taken."""
    out = racelab("run", "03", "--scenario", "staggered", "--timeline",
                  env={"COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    lines = [line.strip() for line in out.stdout.splitlines() if line.strip().startswith("T")]
    assert lines == [
        "T=0 Fri 18:00:00 replica A  tick [ok] · lock → true · claim → true · wrote 1 claim "
        "row, 3 notifications, 3 coin credits, 1 thread, 1 zombie thread closed · COMMIT (lock "
        "released)",
        "T+1m Fri 18:01:00 replica B  tick [ok] · lock → true · claim → false · info: "
        "leaderboard_close 2026-W22 already claimed; nothing to do · COMMIT (lock released)",
        "T+2m Fri 18:02:00 replica C  tick [ok] · lock → true · claim → false · info: "
        "leaderboard_close 2026-W22 already claimed; nothing to do · COMMIT (lock released)",
    ]


def test_unknown_stage_is_one_line_and_exit_2():
    """A stage that does not exist is named back with the known ones."""
    one_line_exit_2(racelab_here("run", "07"), "unknown stage '07'", "03")


def test_unknown_scenario_is_one_line_and_exit_2():
    """A scenario that does not exist is named back with the known ones."""
    one_line_exit_2(racelab_here("run", "03", "--scenario", "tuesday"), "unknown scenario",
                     "staggered")


def test_unreachable_postgres_url_is_one_line_and_exit_2():
    """A RACELAB_POSTGRES_URL nobody answers on is reported, not a traceback."""
    out = racelab("run", "03", env={"RACELAB_POSTGRES_URL": "postgresql://u@127.0.0.1:1/x"})
    one_line_exit_2(out, "RACELAB_POSTGRES_URL", "unreachable")


def test_unknown_option_is_one_line_and_exit_2():
    """argparse's own complaints follow the same one-line rule."""
    one_line_exit_2(racelab_here("run", "03", "--replicas", "zero"), "--replicas")


def test_ctrl_c_leaves_no_replica_and_no_database(pg, tmp_path):
    """SIGINT in the middle of a run: replicas are gone and the run's database is dropped."""
    scenario_file = tmp_path / "long.toml"
    scenario_file.write_text(LONG_RUN)
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "03", "--scenario",
                             str(scenario_file)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    like = f"racelab:{proc.pid}_%"
    replicas: set[int] = set()
    deadline = time.monotonic() + 60
    with psycopg.connect(services.libpq_url(pg.url), autocommit=True) as conn:
        while time.monotonic() < deadline:  # wait for the condition: 3 replicas connected
            n = conn.execute("SELECT count(DISTINCT application_name) FROM pg_stat_activity "
                             "WHERE application_name LIKE %s", (like,)).fetchone()[0]
            if n == 3:
                replicas = descendants(proc.pid)
                break
            time.sleep(0.02)  # a poll, not a wait for luck: the loop ends on the condition
        assert replicas, "the run never got its 3 replicas connected"
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "interrupted" in err and "Traceback" not in err
        assert [pid for pid in replicas if alive(pid)] == []
        left = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s",
                            (f"racelab_{proc.pid}_%",)).fetchall()
        assert left == []


def test_ctrl_c_stops_every_cell_of_a_matrix_running_side_by_side(pg):
    """`racelab matrix` runs two cells at once (RACELAB_JOBS=2); SIGINT while both have replicas
    connected stops every cell: exit 130, no replica left, no database left."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "matrix", "--stage", "03"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "RACELAB_JOBS": "2"})
    seen: set[int] = set()
    deadline = time.monotonic() + 90
    with psycopg.connect(services.libpq_url(pg.url), autocommit=True) as conn:
        while time.monotonic() < deadline:  # wait for the condition: two runs connected at once
            runs = conn.execute(
                "SELECT count(DISTINCT split_part(application_name, ':', 2)) "
                "FROM pg_stat_activity WHERE application_name LIKE %s",
                (f"racelab:{proc.pid}_%",)).fetchone()[0]
            seen |= descendants(proc.pid)
            if runs >= 2:
                break
            time.sleep(0.02)
        assert runs >= 2, "the matrix never had two cells running at once"
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=90)
        assert proc.returncode == 130, err
        assert "interrupted" in err and "Traceback" not in err
        assert [pid for pid in seen if alive(pid)] == []
        left = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s",
                            (f"racelab_{proc.pid}_%",)).fetchall()
        assert left == []
