"""A run's result as the CLI prints it: its table (fitted to the window), where the replicas
tick, its findings, and with `timeline` what each process did."""

from __future__ import annotations

from rich.console import Console

from harness import fit
from harness.engine import registry, report
from harness.engine.result import RunResult


def run_result(console: Console, result: RunResult, timeline: bool = False) -> None:
    for part in fit.run_table(result, console.width):
        console.print(part)
    console.print(report.where_replicas_tick(result), style=report.DIM)
    for line in registry.track(result.stage.track).report.findings(result):
        console.print(line)
    if timeline:
        console.print()
        for line in report.timeline(result):
            console.print(line)
