"""What people look at for an alerts run: deliveries per alert key, listings per window, findings.

Pure table builders like harness.engine.views.tables (whose colours they use); the CLI renders them.
"""

from __future__ import annotations

from itertools import groupby

from rich.table import Table
from rich.text import Text

from harness.engine.model.result import RunResult
from harness.engine.views.tables import BAD, GOOD, WARN, count, run_title
from harness.tracks.alerts.checker import (
    RECONCILE_EVERY,
    AlertsVerdict,
    AlertVerdict,
)
from harness.tracks.alerts.picture import picture_marks, picture_state  # noqa: F401 (the report's)

LABELS = {"workspaces (updated)": "workspace sync"}  # the timeline's words for seams' notes
COLLAPSE_OVER = 5  # a kind with more keys than this is shown as one row (the flood's 600 jobs)
MATRIX_CAPTION = ("cells: alerts and sandbox listings beyond one per dedup window (extra) or "
                  "short of it (missed), and reconciliation passes still running when the next "
                  "window's began (overlapped); ok = exactly as a shared dedup would send; "
                  "accepted = the cost of failing open (Redis down: the team's choice; a claim "
                  "lost in a failover: the lab's extension of it)")


def outcome_words(v: AlertsVerdict) -> str:
    """An outcome of `racelab explore` in words: a run lands alerts and sandbox listings, each
    counted apart ("1 alert, 1 listing"), not summed into "2 alerts"."""
    return (f"{v.sent} alert{'' if v.sent == 1 else 's'}, "
            f"{v.listed} listing{'' if v.listed == 1 else 's'}")


def run_table(result: RunResult) -> Table:
    v: AlertsVerdict = result.verdict
    listings = v.to_json()["listings"]
    table = Table(
        title=run_title(result),
        caption=f"alerts sent {v.sent} of {sum(a.expected for a in v.alerts)} expected · "
                f"sandboxes listed {listings['listed']} of {listings['expected']} expected · "
                + (f"passes overlapped {v.overlapped} · " if v.overlapped else "")
                + f"{result.duration_s:.2f}s",
        title_justify="left", caption_justify="left",
    )
    table.add_column("alert key / reconciliation window", no_wrap=True)
    for name in ("expected", "sent", "duplicates", "missed"):
        table.add_column(name, justify="right")
    for _, same in groupby(v.alerts, key=lambda a: a.kind):
        group = [_row(a) for a in same]
        if len(group) > COLLAPSE_OVER:
            group = [_collapsed(group)]
        for key, expected, sent, dup, missed in group:
            table.add_row(key, str(expected), _landed(sent, expected), count(dup),
                          count(missed, bad_if_positive=False))
    for w in v.windows:
        label = f"sandbox listing {w.window:%H:%M}–{w.window + RECONCILE_EVERY:%H:%M}"
        if w.overlapped:
            label += " (its pass ran into the next)"
        table.add_row(label, str(w.expected), _landed(w.listed, w.expected),
                      count(w.duplicates), count(w.missed, bad_if_positive=False))
    return table


Row = tuple[str, int, int, int, int]  # key, expected, sent, duplicates, missed


def _row(a: AlertVerdict) -> Row:
    return (a.key, a.expected, a.sent, a.duplicates, a.missed)


def _collapsed(group: list[Row]) -> Row:
    """One row for many keys of a kind: every count summed over the keys."""
    label = f"{group[0][0]} … {group[-1][0]} ({len(group)} keys)"
    return (label, *(sum(row[i] for row in group) for i in range(1, 5)))


def _landed(n: int, expected: int) -> Text:
    return Text(str(n), style=BAD if n > expected else (WARN if n < expected else GOOD))


def findings(result: RunResult) -> list[Text]:
    """The run's findings in words, e.g. why a failover sent an alert twice."""
    lines = []
    for name, finding in result.verdict.findings.items():
        line = Text(f"{name}: ", style="bold")
        line.append(finding["explanation"], style=WARN)
        lines.append(line)
    return lines


def cell(result: RunResult) -> Text:
    """One matrix cell: how far the run is from one delivery per dedup window."""
    v = result.verdict
    if not v.duplicates and not v.missed and not v.overlapped:
        return Text("ok", style=GOOD)
    text = Text()
    bugs = v.duplicates - v.accepted
    if bugs:
        text.append(f"{bugs} extra", style=BAD)
    if v.accepted:  # the price of failing open, paid on purpose: not painted as a bug
        text.append(f"{' + ' if bugs else ''}{v.accepted} extra, accepted", style=WARN)
    if v.missed:
        text.append(f"{' · ' if v.duplicates else ''}{v.missed} missed", style=WARN)
    if v.overlapped:  # passes of consecutive windows that ran at once
        text.append(f"{' · ' if text.plain else ''}{v.overlapped} overlapped", style=BAD)
    return text
