"""A matrix that fits the terminal it is printed on, with no cell cut short or wrapped.

Stages as rows is the matrix as the README shows it; when that is wider than the window, the
matrix turns: scenarios as rows and one column per stage, headed by the stage's short id (a
legend line names each), and as many stage columns side by side as fit; the rest follow in a
second table with the same rows. The caption and the marks' legend print under the tables as
plain lines, wrapped to the window with a hanging indent.

A run's table that is wider than the window folds its last wrapping columns (a cron run's
"partial" and "received") into one line per row under it, each named by the row's key.

A timeline line longer than the window wraps under its own text, not back to column 0: the
time and process columns stay clear on the left."""

from __future__ import annotations

import textwrap

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from harness.engine.model import registry
from harness.engine.model.result import RunResult
from harness.engine.views import tables

NATURAL = Console(width=10_000)  # only measures: a table's width when nothing wraps


def width_of(table: Table) -> int:
    return NATURAL.measure(table).maximum


def matrix(results: list[RunResult], title: str, width: int) -> list[RenderableType]:
    """What `racelab matrix` prints in a window `width` columns wide."""
    wide = tables.matrix_table(results, title)
    if width_of(wide) <= width or not results:
        return [wide]
    stages = list(dict.fromkeys(r.stage for r in results))
    groups: list[list] = [[]]
    for stage in stages:
        if groups[-1] and width_of(scenario_rows(results, [*groups[-1], stage])) > width:
            groups.append([])
        groups[-1].append(stage)
    turned: list[RenderableType] = [scenario_rows(results, group) for group in groups]
    names = [f"{s.id} = {s.name}" for s in stages if s.id != s.name]
    columns = [f"columns: {' · '.join(names)}"] if names else []
    if columns and len(columns[0]) > width:
        columns = [f"column {name}" for name in names]
    caption = registry.track(results[0].stage.track).report.MATRIX_CAPTION
    notes = [*columns, *caption.splitlines(), *tables.legend(results)]
    return [Text(title), *turned, *(Text(hanging(line, width)) for line in notes)]


def run_table(result: RunResult, width: int) -> list[RenderableType]:
    """What `racelab run` prints for its table in a window `width` columns wide."""
    table = tables.run_table(result)
    folded: list = []
    while width_of(table) > width and table.columns[-1].no_wrap is False \
            and len(table.columns) > 2:
        folded.insert(0, table.columns.pop())
    if not folded:
        return [table]
    keys = [c for c in table.columns if c.no_wrap]  # the leading columns that name a row
    rows = zip(*(c.cells for c in keys), strict=True)
    labels = [" ".join(str(cell) for cell in cells) for cells in rows]
    lines = []
    for row, label in enumerate(labels):
        for column in folded:
            line = Text(f"{label} {column.header}: ")
            line.append_text(_text(list(column.cells)[row]))
            lines.append(line)
    return [table, *lines]


def timeline(result: RunResult, width: int | None) -> list[Text]:
    """The run's timeline in a window `width` columns wide: a long line wraps with its later
    lines indented to where the first one's text starts (TIMELINE_INDENT), or by 4 spaces when
    the window leaves that text too little room. No width (a pipe, a file): one line per event,
    never wrapped, for grep."""
    if width is None:
        return tables.timeline(result)
    indent = tables.TIMELINE_INDENT if width - tables.TIMELINE_INDENT >= MIN_TEXT else 4
    out: list[Text] = []
    for line in tables.timeline(result):
        out += hang(line, width, indent, head=indent)
    return out


def hang(line: Text, width: int, indent: int, head: int = 0) -> list[Text]:
    """`line` as lines of at most `width` cells: the first `head` cells kept as they are, the
    rest wrapped, every line after the first indented by `indent` spaces."""
    if line.cell_len <= width:
        return [line]
    first, rest = line.divide([head]) if head else (Text(), line)
    pieces = rest.wrap(NATURAL, width - max(head, indent))
    return [Text.assemble(first, pieces[0]),
            *(Text.assemble(" " * indent, piece) for piece in pieces[1:])]


MIN_TEXT = 30  # columns of text a wrapped timeline line keeps right of its indent


def _text(cell: RenderableType) -> Text:
    return cell if isinstance(cell, Text) else Text(str(cell))


def hanging(line: str, width: int) -> str:
    """`line` wrapped to `width`, its later lines indented by two spaces."""
    return textwrap.fill(line, width, subsequent_indent="  ", break_on_hyphens=False)


def scenario_rows(results: list[RunResult], stages: list) -> Table:
    """The matrix turned: one row per scenario (in canonical order), one column per stage."""
    scenarios = tables.columns(results)
    by_key = {(r.stage.name, r.column): r for r in results}
    table = Table()
    table.add_column("scenario", no_wrap=True)
    for stage in stages:
        table.add_column(stage.id, justify="right", no_wrap=True)
    shown = tables.varied(scenarios)
    for name in scenarios:
        cells = [by_key.get((stage.name, name)) for stage in stages]
        table.add_row(tables.header(name, " ", shown),
                      *(tables.marked_cell(r) if r else Text("—", style=tables.DIM)
                        for r in cells))
    return table
