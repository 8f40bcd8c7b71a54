"""`racelab run` of a matrix cell whose number rests on a choice of the lab's says so in its own
table, as the matrix and the JSON do: the cell's marks after the title, and under the caption
one line per mark with what it assumes for this run. A run that is not the cell carries none."""

from __future__ import annotations

from harness.engine.model import assumptions
from tests.helpers import MARK_SIGNS, racelab, racelab_here, racelab_json


def _printed(*args: str) -> list[str]:
    out = racelab("run", *args, env={"COLUMNS": "400"})
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def _mark_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if line and line[0] in MARK_SIGNS]


def test_a_run_of_a_marked_cell_shows_its_marks_and_why_under_its_table(pg):
    """detours-07 under pause-at-begin rests on the lock's 60 s (‡) and on where and how long
    the pause strikes (§): the title ends with '‡§', and the lines under the caption give each
    mark's kind and its reason, the same words as the JSON's `marks`."""
    lines = _printed("detours-07", "--scenario", "pause-at-begin")
    cell = assumptions.of("detours", "detours-07", "pause-at-begin")
    assert lines[0] == ("detours/07-redis-lock-fencing · pause-at-begin · read committed · "
                        "3 replicas · seed 7 ‡§")
    assert _mark_lines(lines) == [f"{m.kind.sign} {m.kind.name}: {m.why}" for m in cell]
    assert _mark_lines(lines)[0].startswith("‡ modelled: the lock's 60 s timeout is the lab's")
    assert [m.kind.name for m in cell] == ["modelled", "chosen"]
    run = racelab_json(racelab_here("run", "detours-07", "--scenario", "pause-at-begin", "--json"))
    assert [(m["mark"], m["why"]) for m in run["marks"]] == [(m.kind.sign, m.why) for m in cell]


def test_a_run_that_is_not_the_cell_carries_no_marks(pg):
    """Another seed is not the matrix's cell: no marks after the title, no lines for them."""
    lines = _printed("detours-07", "--scenario", "pause-at-begin", "--seed", "8")
    assert lines[0] == ("detours/07-redis-lock-fencing · pause-at-begin · read committed · "
                        "3 replicas · seed 8")
    assert _mark_lines(lines) == []


def test_an_unmarked_cell_prints_no_mark_lines(pg):
    """Stage 03 under staggered rests on no choice of the lab's: its table has no mark."""
    lines = _printed("03", "--scenario", "staggered")
    assert lines[0] == "03-claim-row · staggered · read committed · 3 replicas · seed 7"
    assert _mark_lines(lines) == []


def test_two_marks_for_one_reason_share_its_line(pg):
    """detours-01 under failover is ‡ and § for one reason (A's 45 s hold, B's and C's offsets):
    one line, '‡§ modelled, chosen: …', not the same sentence twice."""
    lines = _printed("detours-01", "--scenario", "failover")
    (why,) = {m.why for m in assumptions.of("detours", "detours-01", "failover")}
    assert lines[0].endswith(" · seed 7 ‡§")
    assert _mark_lines(lines) == [f"‡§ modelled, chosen: {why}"]
