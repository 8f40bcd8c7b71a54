"""docs/FIDELITY.md gives a source for every number that rests on the lab's choice: each marked
matrix cell has its row there, with the cell's own marks."""

from __future__ import annotations

import ast
from datetime import timedelta

from harness.engine.model import assumptions, registry, scenario, stages
from tests.helpers import ROOT


def fidelity_cells() -> dict[str, set[str]]:
    """Each `stage/scenario` the table's cells column names → the marks its rows give it."""
    found: dict[str, set[str]] = {}
    for line in (ROOT / "docs" / "FIDELITY.md").read_text().splitlines():
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or len(cols) != 5 or cols[0] == "claim or number":
            continue
        for cell in filter(None, (c.strip() for c in cols[3].split(","))):
            if cell != "—":
                found.setdefault(cell, set()).update(cols[4])
    return found


def _stage_ids(track: str) -> set[str]:
    """The track's stage ids; a track whose stages are named, not listed (a project's), marks
    the cells of every stage: `*`."""
    if registry.track(track).stage_dir is None:
        return {assumptions.EVERY_STAGE}
    return {st.id for st in stages.stages_of(track)}


def test_every_marked_cell_has_a_row_with_its_marks_in_fidelity():
    """A cell the matrices mark (†, ‡, §, ◊) is named in docs/FIDELITY.md with the same marks."""
    named = fidelity_cells()
    marked = {f"{stage}/{name}": {m.kind.sign for m in cell}
              for track in registry.tracks()
              for (stage, name), cell in assumptions.of_track(track).items()}
    assert len(marked) == 65
    assert {cell: named.get(cell) for cell in marked} == marked


def test_every_kind_of_mark_marks_some_cell():
    """A kind no cell carries would be a legend line for nothing; a cell whose number does not
    rest on a kind does not carry it (stage 05's emulated scheduler: see its README)."""
    used = {m.kind.name for track in registry.tracks()
            for cell in assumptions.of_track(track).values() for m in cell}
    assert sorted(used) == sorted(assumptions.KINDS) == ["chosen", "forced", "modelled", "raced"]


def test_every_cell_fidelity_names_is_a_cell_of_a_matrix():
    """No row names a stage or scenario the matrices do not have (a typo would hide a cell)."""
    cells = {f"{st}/{sc.name}" for track in registry.tracks()
             for st in _stage_ids(track) for sc in scenario.canonical(track)}
    assert sorted(set(fidelity_cells()) - cells) == []


def test_every_declared_mark_names_a_cell_of_its_track():
    """Each track's assumes.toml names stages and scenarios of that track only."""
    for track in registry.tracks():
        ids = _stage_ids(track)
        names = {sc.name for sc in scenario.canonical(track)}
        for stage, name in assumptions.of_track(track):
            assert (track, stage in ids, name in names) == (track, True, True), (stage, name)


def _tick_every(stage: stages.Stage) -> timedelta:
    """The stage's own loop cadence: `TICK_EVERY = timedelta(...)` in its worker.py."""
    tree = ast.parse((stage.path / "myapp" / "worker.py").read_text())
    (call,) = [node.value for node in tree.body if isinstance(node, ast.Assign)
               and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["TICK_EVERY"]]
    return timedelta(**{k.arg: ast.literal_eval(k.value) for k in call.keywords})


def test_the_incident_checks_at_the_cadence_of_the_alerts_stages_own_loop():
    """The incident's 30-minute checks are each alerts stage's TICK_EVERY, not a second number
    the scenario makes up."""
    incident = scenario.resolve("incident")
    loops = {st.id: _tick_every(st) for st in stages.stages_of("alerts")}
    assert loops == {"alerts-00": incident.interval, "alerts-01": incident.interval}
    assert incident.interval == timedelta(minutes=30)
