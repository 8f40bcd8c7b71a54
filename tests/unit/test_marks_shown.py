"""Every cell whose number rests on a choice of the lab's shows its marks wherever a reader meets
it in the docs: the README's four matrices and each stage README's table of measured results
(the terminal's matrix and a run's table: tests/lab/test_readme.py, tests/cli/test_run_marks.py).
A cell with no declared mark shows none."""

from __future__ import annotations

import re

import pytest

from harness.engine.model import assumptions, registry, scenario, stages
from tests.helpers import MARK_SIGNS, readme_matrix, signs


def declared_signs(track: str) -> dict[tuple[str, str], str]:
    """(stage id, scenario) → the signs its cell must show, '' for none, for every cell."""
    cells = assumptions.of_track(track)
    return {(st.id, sc.name): assumptions.signs(cells.get((st.id, sc.name), [])).strip()
            for st in stages.stages_of(track) for sc in scenario.canonical(track)}


@pytest.mark.parametrize("track", ["cron", "alerts", "peers", "detours"])
def test_every_readme_matrix_cell_shows_the_marks_its_track_declares(track):
    """A marked cell of the README's matrix ends with its marks, in the legend's order; an
    unmarked one ends with none."""
    folder = {st.folder: st.id for st in stages.stages_of(track)}
    shown = {(folder[f], name): signs(text) for (f, name), text in readme_matrix(track).items()}
    assert shown == declared_signs(track)


def _measured_tables(path) -> list[list[list[str]]]:
    """The tables under a README's '## Measured results', each as rows of cells."""
    text = path.read_text().split("## Measured results", 1)[1].split("\n## ", 1)[0]
    tables, rows = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            tables.append([r for r in rows if not re.fullmatch(r"[-:| ]+", "|".join(r))])
            rows = []
    return tables


def stage_readme_cells(stage: stages.Stage) -> dict[str, str]:
    """Scenario → cell text in the stage README's measured results: a header of scenario names
    over one row of counts, or (the alerts stages) one row per scenario; a scenario the table
    leaves out is not there."""
    names = {sc.name for sc in scenario.canonical(stage.track)}
    found = {}
    for table in _measured_tables(stage.path / "README.md"):
        header, body = table[0], table[1:]
        if set(header) <= names | {"stage"}:
            for row in body:
                found.update({n: v for n, v in zip(header, row, strict=True) if n in names})
        else:
            found.update({row[0]: " ".join(row[1:]) for row in body if row[0] in names})
    return found


def test_every_stage_readme_shows_its_cells_marks():
    """Each stage README's table of measured results shows the marks of each cell it gives (a
    mark may stand in any column of an alerts row), and every marked cell of a detours or peers
    stage is in its README's table."""
    wrong, missing = [], []
    for track in registry.tracks():
        want = declared_signs(track)
        for st in stages.stages_of(track):
            shown = stage_readme_cells(st)
            for name, text in shown.items():
                got = "".join(c for c in text if c in MARK_SIGNS)
                if got != want[(st.id, name)]:
                    wrong.append((st.id, name, got, want[(st.id, name)]))
            if track in ("peers", "detours"):
                missing += [(st.id, name) for (sid, name), s in want.items()
                            if sid == st.id and s and name not in shown]
    assert (wrong, missing) == ([], [])


def test_the_checks_above_cover_60_marked_cells_of_every_kind():
    """The tracks declare 60 marked cells, each kind of mark on some of them: the checks above
    compare every one of them with a table, not an empty list with another."""
    shown = [s for track in registry.tracks() for s in declared_signs(track).values() if s]
    assert len(shown) == 60
    assert set("".join(shown)) == set("†‡§◊")
