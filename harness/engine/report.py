"""What people look at: rich tables for a run and for the matrix, and the run's timeline.

Tables are built by pure functions; the CLI renders them. Colours are declared once here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import replace

from rich.table import Table
from rich.text import Text

from harness.clock import offset_label
from harness.events import Event
from harness.runner import RunResult
from harness.scenario import canonical

BAD = "bold red"
GOOD = "green"
WARN = "yellow"
DIM = "dim"

_WRITE_LABELS = {
    "notifications": "notification",
    "token_transactions": "coin credit",
    "threads": "thread",
    "worker_runs": "claim row",
    "threads (updated)": "zombie thread closed",
    "workspaces (updated)": "workspace sync",
}


def _count(n: int, bad_if_positive: bool = True) -> Text:
    style = (BAD if bad_if_positive else WARN) if n else GOOD
    return Text(str(n), style=style)


def run_table(result: RunResult) -> Table:
    if result.stage.track == "alerts":
        from harness import alerts_report

        return alerts_report.run_table(result)
    v = result.verdict
    s = result.scenario
    table = Table(
        title=f"{result.stage.name} · {s.name} · {s.replicas} replicas · seed {s.seed}",
        caption=f"coins paid {v.coins_paid} of {v.coins_expected} expected · "
                f"{result.duration_s:.2f}s",
        title_justify="left", caption_justify="left",
    )
    table.add_column("job", no_wrap=True)
    table.add_column("slot", no_wrap=True)
    for name in ("expected", "runs", "duplicates", "missed"):
        table.add_column(name, justify="right")
    table.add_column("partial")
    for slot in v.slots:
        runs_style = BAD if slot.runs > slot.expected else (WARN if slot.runs < slot.expected
                                                            else GOOD)
        table.add_row(
            slot.job, slot.key, str(slot.expected), Text(str(slot.runs), style=runs_style),
            _count(slot.duplicates), _count(slot.missed, bad_if_positive=False),
            Text(f"yes: {slot.why}", style=WARN) if slot.partial else Text("no", style=GOOD),
        )
    return table


def cell(result: RunResult) -> Text:
    """One matrix cell: payouts landed per slot, coloured by the verdict."""
    if result.stage.track == "alerts":
        from harness import alerts_report

        return alerts_report.cell(result)
    v = result.verdict
    text = Text(str(v.runs), style=BAD if v.duplicates else (WARN if v.missed else GOOD))
    if v.missed:
        text.append(f" ({v.missed} missed)", style=WARN)
    if v.partial:
        text.append(" partial", style=WARN)
    return text


def matrix_table(results: Iterable[RunResult], title: str) -> Table:
    results = list(results)
    # columns in the canonical order, even when the first stage lacks some (a "—" there)
    order = {sc.name: i for i, sc in enumerate(canonical())}
    scenarios = sorted(dict.fromkeys(r.scenario.name for r in results),
                       key=lambda name: order.get(name, len(order)))
    stages = list(dict.fromkeys(r.stage.name for r in results))
    caption = "cells: runs landed for the slot (expected 1); red = duplicates"
    if results and results[0].stage.track == "alerts":
        from harness.alerts_report import MATRIX_CAPTION as caption
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    table.add_column("stage", no_wrap=True)
    for name in scenarios:
        table.add_column(name, justify="right")
    by_key = {(r.stage.name, r.scenario.name): r for r in results}
    for stage in stages:
        row: list[Text | str] = [stage]
        for name in scenarios:
            r = by_key.get((stage, name))
            row.append(cell(r) if r else Text("—", style=DIM))
        table.add_row(*row)
    return table


def _describe(e: Event) -> str:
    if e.event == "lock":
        return f"lock → {e.detail}"
    if e.event == "claim":
        return f"claim → {e.detail}"
    if e.event == "sentinel":
        return f"summary thread → {e.detail}"
    if e.event == "write":
        parts = []
        for chunk in e.detail.split(", "):
            n, _, table = chunk.partition(" ")
            label = _WRITE_LABELS.get(table, table)
            parts.append(f"{n} {label}{'s' if n != '1' and not label.endswith('closed') else ''}")
        return "wrote " + ", ".join(parts)
    if e.event in ("commit", "rollback"):
        return e.event.upper()
    if e.event == "held":
        return f"held {e.detail} while the others run"
    if e.event == "log":
        return e.detail
    return f"{e.event}: {e.detail}" if e.detail else e.event


_STYLE = {"error": BAD, "fault": WARN, "barrier": WARN, "blocked": WARN, "rollback": WARN,
          "commit": GOOD, "held": DIM}


_DIGITS = re.compile(r"\d+")
COLLAPSE_AT = 3  # this many like events in a row become one: "first … last (N in all)"


def collapse(events: list[Event]) -> list[Event]:
    """Fold runs of events that differ only in their numbers (600 'alert sent: stuck_job:…')
    into one event, so a timeline stays one line per tick."""
    out: list[Event] = []
    run: list[Event] = []

    def shape(e: Event) -> tuple:
        return (e.t, e.replica, e.event, _DIGITS.sub("#", e.detail))

    def flush() -> None:
        if len(run) < COLLAPSE_AT:
            out.extend(run)
        else:
            first, last = run[0].detail, run[-1].detail
            common = os.path.commonprefix([first, last])
            cut = max((i + 1 for i, c in enumerate(common) if not c.isalnum()), default=0)
            detail = f"{first} … {last[cut:]} ({len(run)} in all)"
            out.append(replace(run[0], detail=detail))
        run.clear()

    for e in events:
        if run and (shape(e) != shape(run[0]) or e.event in ("tick", "task")):
            flush()
        run.append(e)
    flush()
    return out


def timeline(result: RunResult) -> list[Text]:
    """One line per replica tick (and per fault): virtual time, replica, what happened."""
    origin = result.scenario.start
    replicas = set(result.scenario.replica_names)
    lines: list[Text] = []
    current: tuple | None = None
    line = Text()
    for e in collapse(result.events):
        key = (e.t, e.replica, e.event if e.replica == "harness" else "")
        if e.event in ("tick", "task") or key != current:
            if line:
                lines.append(line)
            current = key
            line = Text()
            line.append(f"{offset_label(e.t, origin):>9} ", style=DIM)
            line.append(f"{e.t:%a %H:%M:%S} ", style=DIM)
            # replicas by letter; the harness, the scheduler and its tasks by their own names
            who = f"replica {e.replica}" if e.replica in replicas else e.replica
            line.append(f"{who:<10}", style="bold")
            if e.event in ("tick", "task"):
                outcome_style = {"ok": GOOD, "failed": BAD}.get(e.outcome, WARN)
                line.append(f" {e.event} [{e.outcome}]", style=outcome_style)
                if e.detail:
                    line.append(f" ({e.detail})", style=DIM)
                continue
            line.append(" ")
        else:
            line.append(" · ", style=DIM)
        line.append(_describe(e), style=_STYLE.get(e.event, ""))
    if line:
        lines.append(line)
    return lines


def bench_table(figures) -> Table:
    table = Table(title="racelab bench", title_justify="left")
    table.add_column("figure", no_wrap=True)
    table.add_column("value", justify="right")
    table.add_column("unit")
    table.add_column("note", style=DIM)
    for f in figures:
        table.add_row(f.name, f"{f.value:.3f}" if f.value < 100 else f"{f.value:.0f}", f.unit,
                      f.note)
    return table
