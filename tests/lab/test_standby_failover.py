"""An asynchronous standby's failover (issue 40, part 6): the run's PostgreSQL is a primary with a
real hot standby of its own behind one front address; the standby stops receiving WAL just
before A's COMMIT, the primary dies right after it, the standby is promoted. 03 pays twice
(A's payout acknowledged, then lost with its claim; B pays again on the new primary); with
`synchronous_commit = remote_apply` A's COMMIT is never acknowledged and 03 pays once."""

from __future__ import annotations

import re
import threading

import psycopg

from harness.engine.model import scenario as scenarios
from harness.engine.model import stages
from harness.engine.run import runner
from harness.fault_tools.pg_failover import FailoverPair
from tests.helpers import (
    ROOT,
    FieldPicture,
    _own_dirs,
    marked_cell,
    one_line_exit_2,
    racelab_here,
    racelab_json,
    racelab_pid,
)

REMOTE_APPLY = str(ROOT / "docs" / "scenarios" / "standby-failover-remote-apply.toml")
DOC = ROOT / "docs" / "field-faults.md"
PICTURE = FieldPicture("03", "standby-failover")
LSN = re.compile(r"^[0-9A-F]+/[0-9A-F]+$")


def test_03_pays_twice_asynchronously_and_once_with_remote_apply(pg):
    assert marked_cell("03", "standby-failover") == "2 §"
    assert marked_cell("03", REMOTE_APPLY) == "1"


def test_the_lost_payout_is_counted_from_the_old_primary_and_the_failover_is_in_the_history(pg):
    result = runner.run(stages.resolve("03"), scenarios.resolve("standby-failover", "cron"))
    slot, = result.verdict.slots
    assert (slot.runs, slot.lost, slot.duplicates) == (2, 1, 1)
    claims = [(e.replica, e.detail) for e in result.events if e.event == "claim"]
    assert claims == [("A", "true"), ("B", "true"), ("C", "false")]
    done, = [op for op in result.history.ops_in_order()
             if op.process == "standby-failover" and op.type.value == "ok"]
    v = done.value
    assert v["commit"] == "acknowledged" and v["lost_transactions"] == 1
    assert v["restarted"] == ["B", "C"]
    assert all(LSN.match(v[k]) for k in ("standby_replayed_wal", "primary_wal", "promoted_at_wal"))
    # the timeline in the order it happened: the cut, A's COMMIT, then the failover
    order = [e.data["on"][0][1] if e.replica == "harness" else e.event
             for e in result.events if e.t == result.scenario.start]
    assert order.index("stream cut") < order.index("commit") < order.index("failover")


def test_with_remote_apply_the_commit_waits_for_the_standby_and_dies_with_the_primary(pg):
    result = runner.run(stages.resolve("03"), scenarios.resolve(REMOTE_APPLY, "cron"))
    slot, = result.verdict.slots
    assert (slot.runs, slot.lost) == (1, 0)
    done, = [op for op in result.history.ops_in_order()
             if op.process == "standby-failover-remote-apply" and op.type.value == "ok"]
    assert done.value["commit"] == "waited for the standby"
    assert [e.detail for e in result.events if e.replica == "A" and e.event == "commit"] == []
    # the failover comes first, then A's COMMIT fails with the primary gone
    order = [e.data["on"][0][1] if e.replica == "harness" else e.event
             for e in result.events if e.t == result.scenario.start]
    assert order.index("stream cut") < order.index("failover") < len(order) - 1
    assert "OperationalError" in [e for e in result.events if e.replica == "A"][-1].detail
    assert not [t for t in threading.enumerate() if t.name.startswith("racelab-proxy")]
    claims = [(e.replica, e.detail) for e in result.events if e.event == "claim"]
    assert claims == [("A", "true"), ("B", "true"), ("C", "false")]


def test_every_cell_of_the_docs_table_and_the_readme_column(pg):
    """docs/field-faults.md's table and the README's standby-failover column, recomputed."""
    for stage in ("02", "03", "04"):
        cells_ = (marked_cell(stage, "standby-failover"), marked_cell(stage, REMOTE_APPLY))
        assert cells_ == ("2 §", "1"), stage
        folder = stages.resolve(stage).folder
        assert f"| [{folder}](../{folder}/) | **2 §** | 1 |" in DOC.read_text()
    for stage in ("00", "01"):
        cells_ = (marked_cell(stage, "standby-failover"), marked_cell(stage, REMOTE_APPLY))
        assert cells_ == ("3", "2"), stage


def test_05_whose_scheduler_pays_is_refused_in_one_line(pg):
    one_line_exit_2(racelab_here("run", "05", "--scenario", "standby-failover"),
                    "standby-failover", "scheduler")


def test_two_failovers_or_a_replica_ticking_beside_a_are_refused_in_one_line(pg, tmp_path):
    """One standby to promote: one failover a run. The other replicas restart on the new
    primary while A's tick goes on: one ticking at A's instants would be held beside it."""
    text = (ROOT / "harness/tracks/cron/scenarios/standby-failover.toml").read_text()
    twice = tmp_path / "twice.toml"
    twice.write_text(text + '\n[[faults]]\nkind = "standby-failover"\n'
                     'at = "2026-05-29T18:01:00-06:00"\nreplica = "B"\n')
    one_line_exit_2(racelab_here("run", "03", "--scenario", str(twice)), "one failover a run")
    beside = tmp_path / "beside.toml"
    beside.write_text(text.replace('offsets = ["0s", "1m", "2m"]', 'offsets = ["0s", "0s", "2m"]'))
    one_line_exit_2(racelab_here("run", "03", "--scenario", str(beside)), "must tick alone")


def test_the_pair_loses_what_the_primary_acknowledged_after_the_cut():
    """The pair itself: a row committed after the cut is on the old primary only; after the
    failover the front address reaches the promoted standby, which lacks it."""
    pair = FailoverPair("test")
    try:
        with psycopg.connect(pair.url, autocommit=True) as conn:
            conn.execute("CREATE TABLE t (x int)")
            conn.execute("INSERT INTO t VALUES (1)")
        pair.cut_stream()
        with psycopg.connect(pair.url, autocommit=True) as conn:
            conn.execute("INSERT INTO t VALUES (2)")
        pair.fail_over()
        with psycopg.connect(pair.url, autocommit=True) as conn:
            assert conn.execute("SELECT pg_is_in_recovery()").fetchone()[0] is False
            assert conn.execute("SELECT x FROM t").fetchall() == [(1,)]
    finally:
        pair.close()
    assert pair.primary is None and pair.standby is None and pair.front is None


def test_a_run_leaves_no_server_and_no_directory_and_its_json_says_lost(pg):
    out, pid = racelab_pid("run", "03", "--scenario", "standby-failover", "--json")
    data = racelab_json(out)
    assert data["runs"] == 2 and data["slots"][0]["lost"] == 1
    assert _own_dirs(pid) == []


def test_the_picture_of_standby_failover_is_not_stale(pg):
    """docs/field-faults.md shows 03 under standby-failover; a fresh run draws the same words
    (`python -m tests.lab.test_standby_failover` redraws it)."""
    PICTURE.assert_fresh()


if __name__ == "__main__":  # redraw the picture docs/field-faults.md shows
    PICTURE.redraw()
