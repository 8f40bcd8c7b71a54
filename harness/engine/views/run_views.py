"""The views of one run, each an object registered like a track (registry.add_view): its name
is its option of `racelab run`, and `run` and `step` ask every registered view, never one by
name. A view written to a file (`metavar`, e.g. `--svg FILE`) is checked before the run and
written whole after it (harness.writes.Target); a printed one writes on the console, the
table unless a view printed `alone` (`--json`) was asked for.

The lab's own: the table (no option: printed unless `--json`), `--json`, `--timeline`,
`--svg` (the run as lanes against virtual time) and `--html` (the page that steps through it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from rich.console import Console
from rich.text import Text

from harness.engine.model import registry
from harness.engine.model.result import RunResult
from harness.engine.views import fit, pictures, run_page, tables

if TYPE_CHECKING:
    from harness.writes import Target


class RunView(Protocol):
    """One view of a run."""

    name: str  # its option is --NAME; "" for the table, which has none
    help: str
    metavar: str | None  # "FILE": written whole to the file the option names; None: printed
    alone: bool  # printed in place of every other printed view (the table, the timeline)
    # optional (registry.READS_STATES, default True): it shows the shared state read after each
    # commit; a run none of whose views does leaves that read out
    reads_states: bool

    def write(self, result: RunResult, out: Target | Console) -> None:
        """Write the view of `result`: to its file's Target, or on the console."""
        ...


@dataclass(frozen=True)
class FileView:
    """A view written whole to a file: `render` gives its text."""

    name: str
    help: str
    render: object  # (RunResult) -> str
    metavar: str | None = "FILE"
    alone: bool = False
    reads_states: bool = True

    def write(self, result: RunResult, out: Target) -> None:
        out.write(self.render(result))


class Table:
    name, metavar, alone, reads_states = "", None, False, False
    help = "the run's table, where its replicas tick, and its findings"

    def write(self, result: RunResult, out: Console) -> None:
        run_result(out, result)


class Json:
    name, metavar, alone = "json", None, True
    help = "print one JSON object"

    def write(self, result: RunResult, out: Console) -> None:
        print(json.dumps(result.to_json()), file=out.file)


class Timeline:
    name, metavar, alone, reads_states = "timeline", None, False, False
    help = "print what each replica did"

    def write(self, result: RunResult, out: Console) -> None:
        out.print()
        for line in fit.timeline(result, out.width if out.is_terminal else None):
            out.print(line)


def printed(views: list[RunView], asked: set[str]) -> list[RunView]:
    """The printed views a run with options `asked` shows, in registration order: a view
    printed alone if one was asked for, else the table and the printed views asked for."""
    mine = [v for v in views if v.metavar is None and (not v.name or v.name in asked)]
    return [v for v in mine if v.alone][:1] or [v for v in mine if not v.alone]


def reads_states(views: list[RunView]) -> bool:
    """Whether a run shown in these views must read the shared state after each commit."""
    return any(registry.READS_STATES.of(v) for v in views)


def run_result(console: Console, result: RunResult, timeline: bool = False) -> None:
    """The table, where the replicas tick, the findings; with `timeline` what each did."""
    table(console, result)
    console.print(tables.where_replicas_tick(result), style=tables.DIM)
    for line in registry.track(result.stage.track).report.findings(result):
        console.print(line)
    if timeline:
        Timeline().write(result, console)


def table(console: Console, result: RunResult) -> None:
    """The run's table in the window's width; on a terminal a line folded out of it wraps with
    a hanging indent (on a pipe it stays one line, for grep)."""
    for part in fit.run_table(result, console.width):
        if console.is_terminal and isinstance(part, Text):
            for line in fit.hang(part, console.width, 2):
                console.print(line)
        else:
            console.print(part)


for _view in (Table(), Json(), Timeline(),
              FileView("svg", "also draw the run as lanes against virtual time, as SVG",
                       pictures.svg),
              FileView("html", "also write one offline page that steps through the run op by op "
                       "(FILE#step=N opens at op N)", run_page.page)):
    registry.add_view(_view)
