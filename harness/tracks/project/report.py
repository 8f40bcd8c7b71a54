"""What people look at for a run of a project's job: each side effect per slot, and a cell."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from harness.engine.model.result import RunResult
from harness.engine.views.tables import BAD, GOOD, WARN, count, run_title

MATRIX_CAPTION = "cells: the job's side effects that landed, over its slots; red = duplicates"
LABELS: dict[str, str] = {}  # the seams watch no table of a project's by name


def outcome_words(v) -> str:
    """An exploration's outcome: each effect's counts, slot by slot ("digests 2, 1 per slot")."""
    return "; ".join(f"{name} {', '.join(map(str, counts))} per slot"
                     for name, counts in v.per_effect().items())


def picture_state(value: dict) -> tuple[str, dict[str, str]]:
    """The state lane's words: each effect's count so far, slot by slot."""
    return " · ".join(f"{name} {', '.join(map(str, counts))}"
                      for name, counts in value.items()), {}


def run_table(result: RunResult) -> Table:
    v = result.verdict
    table = Table(title=run_title(result), caption=f"{result.duration_s:.2f}s",
                  title_justify="left", caption_justify="left")
    for name in ("slot", "effect", "expected"):
        table.add_column(name, no_wrap=True)
    for name in ("landed", "duplicates", "missed"):
        table.add_column(name, justify="right")
    for c in v.parts():
        style = BAD if c.duplicates else (WARN if c.missed else GOOD)
        table.add_row(c.slot.isoformat(timespec="minutes"), c.effect.name, c.effect.expect,
                      Text(str(c.landed), style=style), count(c.duplicates),
                      count(c.missed, bad_if_positive=False))
    return table


def findings(result: RunResult) -> list[Text]:
    """The slots whose effects broke their promise, in words."""
    return [Text(f"{c.slot.isoformat(timespec='minutes')}: {c.landed} {c.effect.name}, "
                 f"expected {c.effect.expect}", style=BAD if c.duplicates else WARN)
            for c in result.verdict.parts() if c.duplicates or c.missed]


def cell(result: RunResult) -> Text:
    v = result.verdict
    text = Text(str(v.runs), style=BAD if v.duplicates else (WARN if v.missed else GOOD))
    if v.missed:
        text.append(f" ({v.missed} missed)", style=WARN)
    return text
