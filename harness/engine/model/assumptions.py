"""Marks on matrix cells whose number rests on a choice of the lab's rather than on the story
or the library alone: the forced overlap of same-instant ticks, a parameter the lab models or
sets, times the lab chose, an order of waiters that PostgreSQL picks.

The marks are data, declared by each track in `assumes.toml` beside its scenarios: a cell is
listed there (stage id, scenario, what it assumes, and why) only where the assumption changes or
underlies its number. Nothing here reads a run's words; a cell's marks follow from its stage and
scenario alone. docs/FIDELITY.md gives every marked cell's source.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from harness.engine.model import registry, scenario
from harness.engine.model.scenario import Scenario
from harness.engine.model.stages import Stage

FILE = "assumes.toml"


@dataclass(frozen=True)
class Kind:
    name: str
    sign: str
    legend: str
    # the cell is shown from a run whose waiters went on in the order they began to wait
    in_order: bool = False


# In the order their legend lines are printed.
KINDS = {k.name: k for k in (
    Kind("forced", "†", "same-instant ticks forced to overlap, each held before COMMIT until "
                        "the others have run; ticks a second apart can count otherwise"),
    Kind("modelled", "‡", "rests on a parameter the lab models or sets (named in "
                          "docs/FIDELITY.md), not on a value observed"),
    Kind("chosen", "§", "rests on times the lab chose (the scenario file's); the post gives "
                        "none"),
    Kind("raced", "◊", "two replicas wait on one row and PostgreSQL, not the lab, picks which "
                       "goes on first; shown in the order they began to wait (a run that went "
                       "otherwise is repeated): the other order counts otherwise",
         in_order=True),
)}


@dataclass(frozen=True)
class Mark:
    kind: Kind
    why: str  # one sentence: what the assumption does to this cell

    def to_json(self) -> dict:
        return {"mark": self.kind.sign, "assumes": self.kind.name, "why": self.why}


def declared(home: Path) -> dict[tuple[str, str], list[Mark]]:
    """A track's marked cells, (stage id, scenario) → marks in legend order; {} without a file.
    A kind the catalogue does not know is an error of the lab's data, raised as such."""
    path = home / FILE
    if not path.is_file():
        return {}
    cells: dict[tuple[str, str], list[Mark]] = {}
    for entry in tomllib.loads(path.read_text()).get("cell", []):
        unknown = [k for k in entry["assumes"] if k not in KINDS]
        if unknown:
            raise ValueError(f"{path}: unknown assumption {unknown[0]!r}; known: "
                             f"{', '.join(KINDS)}")
        for name in entry["scenarios"]:
            marks = cells.setdefault((entry["stage"], name), [])
            marks += [Mark(KINDS[k], entry["why"]) for k in entry["assumes"]]
    order = list(KINDS)
    return {key: sorted(m, key=lambda m: order.index(m.kind.name)) for key, m in cells.items()}


@cache
def of_track(track: str) -> dict[tuple[str, str], list[Mark]]:
    return declared(registry.track(track).home)


EVERY_STAGE = "*"  # in assumes.toml: a cell of every stage of the track (a project's)


def of(track: str, stage_id: str, name: str) -> list[Mark]:
    """The marks of one cell: what its number assumes."""
    cells = of_track(track)
    return cells.get((stage_id, name), []) or cells.get((EVERY_STAGE, name), [])


def of_run(stage: Stage, s: Scenario) -> list[Mark]:
    """The marks of a run that is a matrix cell: the canonical scenario as it ships. A run
    changed by --replicas or --seed, or a user's file that borrows a canonical name, is not the
    cell, and carries none."""
    fit = registry.track(s.track).fit  # an app's own slots: its cells are the fitted ones
    if s not in [fit(stage, c) if fit else c for c in scenario.canonical(s.track)]:
        return []
    return of(stage.track, stage.id, s.name)


def signs(marks: list[Mark]) -> str:
    """' †§' for a cell's marks ('' for none), each sign once."""
    found = "".join(dict.fromkeys(m.kind.sign for m in marks))
    return f" {found}" if found else ""


def explained(cell: list[Mark]) -> list[str]:
    """What one cell's marks assume, a line per reason: its signs, the kinds of choice, and
    what they do to this cell ('‡§ modelled, chosen: …' where one reason carries two)."""
    reasons: dict[str, list[Kind]] = {}
    for m in cell:
        reasons.setdefault(m.why, []).append(m.kind)
    return [f"{''.join(k.sign for k in kinds)} {', '.join(k.name for k in kinds)}: {why}"
            for why, kinds in reasons.items()]


def legend(marked: list[list[Mark]]) -> list[str]:
    """One line per kind of mark among the cells given, in the catalogue's order."""
    used = {m.kind.name for marks in marked for m in marks}
    return [f"{k.sign} {k.legend}" for k in KINDS.values() if k.name in used]
