"""The README's matrices are what the lab measures: every cell is recomputed from a run."""

from __future__ import annotations

import re

import pytest

from harness import cli
from harness.engine import marks, report, scenario, stages
from tests.helpers import ROOT, dry_runs, run

NOT_APPLICABLE = "—"


def readme_matrix(track: str) -> dict[tuple[str, str], str]:
    """The table between <!-- matrix:TRACK --> and <!-- /matrix:TRACK --> in README.md."""
    text = (ROOT / "README.md").read_text()
    block = re.search(rf"<!-- matrix:{track} -->(.*?)<!-- /matrix:{track} -->", text, re.S)
    assert block, f"README.md has no matrix:{track} block"
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in block.group(1).strip().splitlines()]
    header, body = rows[0], rows[2:]
    cells = {}
    for row in body:
        folder = row[0].strip("[]").split("](")[0]
        for name, value in zip(header[1:], row[1:], strict=True):
            cells[(folder, name)] = value.replace("**", "")
    return cells


def measured_matrix(track: str) -> dict[tuple[str, str], str]:
    cells = {}
    for st in stages.stages_of(track):
        for sc in scenario.canonical(track):
            key = (st.folder, sc.name)
            if not cli.applies(st, sc):
                cells[key] = NOT_APPLICABLE
            else:
                cells[key] = report.marked_cell(run(st.id, sc.name)).plain
    return cells


@pytest.mark.slow
@pytest.mark.parametrize("track", ["cron", "alerts", "peers", "detours"])
def test_readme_matrix_is_what_the_lab_measures(pg, track):
    """Every stage × canonical scenario cell in the README equals what `make demo` prints."""
    assert readme_matrix(track) == measured_matrix(track)


@pytest.mark.parametrize("track", ["cron", "alerts", "peers", "detours"])
def test_readme_gives_each_matrix_the_legend_of_its_marks(track):
    """Under each matrix, one line per kind of mark its cells carry, as the lab prints it."""
    text = (ROOT / "README.md").read_text()
    after = text.split(f"<!-- /matrix:{track} -->\n\n", 1)[1].split("\n\n", 1)[0]
    lines = [line.removeprefix("- ") for line in after.splitlines()]
    assert lines == marks.legend(list(marks.of_track(track).values()))
    assert len(lines) >= 2


def test_every_make_target_the_readme_names_has_a_recipe():
    """`make stage-03`, `make alerts-01`, `make diff-02-03`, …: each one the README names runs
    a command (a dry run here), rather than 'Nothing to be done' or 'No rule'."""
    text = (ROOT / "README.md").read_text()
    targets = sorted(set(re.findall(r"\bmake ([a-z][a-z0-9-]*)", text)))
    assert {"demo", "test", "stage-03", "alerts-01", "diff-02-03", "thorough", "bench"} <= set(
        targets)
    for target, out in dry_runs(targets):
        assert (target, out.returncode) == (target, 0), out.stderr
        assert "Nothing to be done" not in out.stdout + out.stderr, target
        assert out.stdout.strip(), target
