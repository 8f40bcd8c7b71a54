"""A run's result as the CLI prints it: its table (fitted to the window), where the replicas
tick, its findings, and with `timeline` what each process did."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from harness.engine.model import registry
from harness.engine.model.result import RunResult
from harness.engine.views import fit, report


def run_result(console: Console, result: RunResult, timeline: bool = False) -> None:
    table(console, result)
    console.print(report.where_replicas_tick(result), style=report.DIM)
    for line in registry.track(result.stage.track).report.findings(result):
        console.print(line)
    if timeline:
        console.print()
        for line in fit.timeline(result, console.width if console.is_terminal else None):
            console.print(line)


def table(console: Console, result: RunResult) -> None:
    """The run's table in the window's width; on a terminal a line folded out of it wraps with
    a hanging indent (on a pipe it stays one line, for grep)."""
    for part in fit.run_table(result, console.width):
        if console.is_terminal and isinstance(part, Text):
            for line in fit.hang(part, console.width, 2):
                console.print(line)
        else:
            console.print(part)
