"""Overlapping slots (issue 40, part 4): the alerts track's reconciliation pass outlasts its
2-minute window. A lists at 14:00 and stands still (SIGSTOP) before its writes until 14:05; B
lists at 14:02 and 14:04 and writes. The pass of 14:00 is still running when the next one
begins, whatever claims each window: both stages count 1 overlapped, and the rows end with A's
older listing. Counted from the sink's listings and the rows as the database showed them."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import psycopg
import pytest

from harness.engine.model import scenario as scenarios
from harness.engine.model import stages
from harness.engine.model.faults import HoldAt
from harness.engine.run import runner
from harness.infra import rundb, services
from harness.tracks.alerts import checker as ac
from tests.helpers import ROOT, FieldPicture, marked_cell, racelab, racelab_json

DOC = ROOT / "docs" / "field-faults.md"
PICTURE = FieldPicture("alerts-01", "overlap")
AT = datetime.fromisoformat("2026-06-05T14:00:00-06:00")


def _at(minutes: int) -> datetime:
    return AT + timedelta(minutes=minutes)


@pytest.mark.parametrize("stage", ["alerts-00", "alerts-01"])
def test_both_stages_count_one_overlap_and_no_listing_too_many(pg, stage):
    """A claim per window (01) does not stop it: B's window has a key of its own."""
    assert marked_cell(stage, "overlap") == "1 overlapped ‡§"
    data = racelab_json(racelab("run", stage, "--scenario", "overlap", "--json"))
    listings = data["listings"]
    assert (listings["listed"], listings["duplicates"], listings["missed"]) == (3, 0, 0)
    assert listings["overlapped"] == 1
    assert [w["overlapped"] for w in listings["windows"]] == [True, False, False]
    o, = data["findings"]["overlap"]["overlaps"]
    assert (o["by"], o["listed_at"], o["written_by"]) == ("A", _at(0).isoformat(),
                                                         _at(5).isoformat())
    assert (o["next_by"], o["next_listed_at"]) == ("B", _at(2).isoformat())


def test_the_rows_end_with_the_older_listing_and_without_the_stall_nothing_overlaps(pg):
    """The finding is what the database holds at the end (A's synced_at, 14:00, after B wrote
    14:02 and 14:04), and the same scenario without its fault overlaps nothing."""
    s = scenarios.resolve("overlap", "alerts")
    pg_url = services.postgres().url
    result = runner.run(stages.resolve("alerts-01"), s, keep=True)
    try:
        with psycopg.connect(services.libpq_url(services.app_url(pg_url, result.database))) as c:
            synced = dict(c.execute("SELECT id, synced_at FROM workspaces").fetchall())
    finally:
        rundb.discard(pg_url, result.database)
    assert synced == {"ws-1": _at(0), "ws-2": _at(0)}
    assert "ws-1, ws-2 still hold its listing of 14:00" in \
        result.verdict.findings["overlap"]["explanation"]
    calm = runner.run(stages.resolve("alerts-01"), replace(s, faults=()))
    assert (calm.verdict.overlapped, calm.verdict.listed, calm.verdict.findings) == (0, 3, {})


def test_a_pass_whose_rows_showed_before_the_next_listing_did_not_overlap():
    """`ac.overlaps` alone: rows first seen at the next pass's instant were written before
    its ticks (the read comes first), rows never seen tell nothing."""
    listed = {_at(0): (_at(0), "A"), _at(2): (_at(2), "B"), _at(4): (_at(4), "B")}
    assert [o.window for o in ac.overlaps(listed, {_at(0): _at(5), _at(2): _at(4)})] == [_at(0)]
    assert ac.overlaps(listed, {_at(0): _at(2), _at(2): _at(4)}) == []
    assert ac.overlaps(listed, {}) == []


def test_a_hold_before_a_statement_names_one_the_hooks_know():
    assert HoldAt(verb="UPDATE", table="workspaces").trips("UPDATE", "workspaces")
    assert not HoldAt(verb="UPDATE", table="workspaces").trips("INSERT", "workspaces")
    assert not HoldAt().trips("UPDATE", "workspaces") and HoldAt().at_end()
    with pytest.raises(ValueError):
        HoldAt(verb="DELETE", table="workspaces")


def test_the_docs_table_and_the_readme_column(pg):
    """docs/field-faults.md's row and README's overlap column say what the runs count."""
    text, readme = DOC.read_text(), (ROOT / "README.md").read_text()
    for stage in ("alerts-00", "alerts-01"):
        folder = stages.resolve(stage).folder
        assert f"| [{folder}](../{folder}/) | **1 overlapped** ‡§ |" in text
    assert "| prune-flood | reconcile | redis-failover | overlap |" in readme


def test_the_picture_of_overlap_is_not_stale(pg):
    """docs/field-faults.md shows alerts-01 under overlap; a fresh run draws the same words
    (`python -m tests.lab.test_overlap` redraws it)."""
    PICTURE.assert_fresh()


if __name__ == "__main__":  # redraw the picture docs/field-faults.md shows
    PICTURE.redraw()
