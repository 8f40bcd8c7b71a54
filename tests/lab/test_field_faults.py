"""Faults real teams report, as scenarios: claim retention (issue 40, part 3). A cleanup that
deletes claims before a late start of their slot lets it pay again; one that keeps them until
the slot's week has passed does not."""

from __future__ import annotations

from harness.engine.model import scenario as scenarios
from harness.engine.model import stages
from harness.engine.run import cells, runner
from harness.engine.views import tables
from tests.helpers import ROOT, FieldPicture, left_by, one_line_exit_2, racelab, racelab_pid

BY_SLOT = ROOT / "docs" / "scenarios" / "claim-cleanup-by-slot.toml"
PICTURE = FieldPicture("03", "claim-cleanup")


def cell(stage: str, scenario: str) -> str:
    st = stages.resolve(stage)
    return tables.marked_cell(cells.run_cell(st, scenarios.resolve(scenario, st.track))).plain


def test_claim_cleanup_lets_a_late_start_claim_the_slot_again(pg):
    """A claims at 18:00, the cleanup deletes its claim at 18:05, C (10 minutes slow) ticks at
    true 18:12 reading 18:02 and claims the week again: 03 and 04 pay twice (§: the times,
    window and skew are the lab's); 05's one task claimed at 18:00 and no late start comes
    (C's worker does not pay there): 1."""
    assert [cell(s, "claim-cleanup") for s in ("03", "04", "05")] == ["2 §", "2 §", "1"]
    result = runner.run(stages.resolve("03"), scenarios.resolve("claim-cleanup", "cron"))
    said = [(e.replica, e.detail) for e in result.events if e.event in ("fault", "claim")]
    assert said == [("A", "true"), ("B", "false"),
                    ("harness", "claim-cleanup: the retention job deleted 1 claim row older "
                                "than 5 minutes"),
                    ("C", "true")]


def test_keeping_claims_until_their_week_has_passed_pays_once(pg):
    """The fix, as the cleanup's own setting: claim-cleanup-by-slot deletes no claim of the
    current week, and C's late start finds A's claim."""
    for stage in ("03", "04"):
        result = runner.run(stages.resolve(stage), scenarios.resolve(str(BY_SLOT), "cron"))
        assert (result.verdict.runs, result.verdict.duplicates) == (1, 0), stage


def test_a_stage_with_no_claim_table_refuses_the_scenario_in_one_line(pg):
    out = racelab("run", "02", "--scenario", "claim-cleanup")
    one_line_exit_2(out, "claim-cleanup", "02-thread-sentinel has no claim table")


def test_nothing_is_left_after_a_cleanup_run(pg):
    out, pid = racelab_pid("run", "03", "--scenario", "claim-cleanup", "--json")
    assert out.returncode == 0, out.stderr
    assert left_by(pid, pg.url) == []


def test_the_picture_of_claim_cleanup_is_not_stale(pg):
    """docs/field-faults.md shows 03 under claim-cleanup: A's claim, the cleanup, C's second
    claim and payout; a fresh run draws the same words (`python -m tests.lab.test_field_faults`
    redraws it)."""
    drawn = PICTURE.draw()
    assert "claim-cleanup" in drawn
    PICTURE.assert_fresh(drawn)


if __name__ == "__main__":  # redraw the picture docs/field-faults.md shows
    PICTURE.redraw()
