"""The README's matrices are what the lab measures: every cell is recomputed from a run."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from harness.engine.model import assumptions, scenario, stages
from harness.engine.run.cells import applies
from harness.engine.views import fit, tables
from tests.helpers import ROOT, dry_runs, readme_matrix, run, signs, terminal_cells

NOT_APPLICABLE = "—"


def measured_matrix(track: str) -> dict[tuple[str, str], str]:
    cells = {}
    for st in stages.stages_of(track):
        for sc in scenario.canonical(track):
            key = (st.folder, sc.name)
            if not applies(st, sc):
                cells[key] = NOT_APPLICABLE
            else:
                cells[key] = tables.marked_cell(run(st.id, sc.name)).plain
    return cells


TRACKS = [pytest.param(t, marks=pytest.mark.xdist_group(f"matrix-{t}"))  # one worker runs each
          for t in ("cron", "alerts", "peers", "detours")]


@pytest.mark.slow
@pytest.mark.parametrize("track", TRACKS)
def test_readme_matrix_is_what_the_lab_measures(pg, track):
    """Every stage × canonical scenario cell in the README equals what `make demo` prints."""
    assert readme_matrix(track) == measured_matrix(track)


def printed_matrix(track: str, width: int) -> str:
    """What `racelab matrix --track TRACK` prints in a window `width` columns wide (the same
    runs as the README's test, cached)."""
    results = [run(st.id, sc.name) for st in stages.stages_of(track)
               for sc in scenario.canonical(track) if applies(st, sc)]
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    for part in fit.matrix(results, "matrix", width):
        console.print(part)
    return console.export_text()


@pytest.mark.slow
@pytest.mark.parametrize("track", TRACKS)
def test_the_terminal_matrix_shows_every_cell_with_its_marks_wide_and_turned(pg, track):
    """Every cell `racelab matrix` prints, with stages as rows (a wide window) and turned
    (scenarios as rows, 100 columns), ends with the marks its track declares for it, and an
    unmarked cell with none."""
    declared = assumptions.of_track(track)
    cells = [(st, sc.name) for st in stages.stages_of(track)
             for sc in scenario.canonical(track) if applies(st, sc)]
    want = {(st.id, name): assumptions.signs(declared.get((st.id, name), [])).strip()
            for st, name in cells}
    wide, turned = terminal_cells(printed_matrix(track, 1000)), terminal_cells(
        printed_matrix(track, 100))
    assert {(st.id, name): signs(wide[(st.name, name)]) for st, name in cells} == want
    assert {(st.id, name): signs(turned[(name, st.id)]) for st, name in cells} == want
    assert sum(1 for s in want.values() if s) == len(declared)


@pytest.mark.parametrize("track", ["cron", "alerts", "peers", "detours"])
def test_readme_gives_each_matrix_the_legend_of_its_marks(track):
    """Under each matrix, one line per kind of mark its cells carry, as the lab prints it."""
    text = (ROOT / "README.md").read_text()
    after = text.split(f"<!-- /matrix:{track} -->\n\n", 1)[1].split("\n\n", 1)[0]
    lines = [line.removeprefix("- ") for line in after.splitlines()]
    assert lines == assumptions.legend(list(assumptions.of_track(track).values()))
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
