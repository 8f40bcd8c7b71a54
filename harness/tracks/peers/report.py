"""The peers track's report: the cron track's tables and cells, and in its pictures the
library's own decisions about the slot, read from its log lines: Celery beat sending the task,
RedBeat's lock taken, or found taken (a beat waiting for it)."""

from __future__ import annotations

from harness.engine.runner import RunResult
from harness.tracks.cron import report as cron

MATRIX_CAPTION = cron.MATRIX_CAPTION
LABELS, RUN_WORD = cron.LABELS, cron.RUN_WORD
run_table, findings, cell = cron.run_table, cron.findings, cron.cell

SENDS = ("Scheduler: Sending due task", "ok", "beat sends the task")
TAKES = ("beat: Acquired lock", "ok", "lock ✓ (RedBeat)")
WAITS = ("beat: lock taken", "skip", "lock ✗ → waits (RedBeat)")


def picture_marks(result: RunResult) -> dict[int, tuple[str, str]]:
    """The cron track's payout marks, and the library's decisions. A beat's wait is marked the
    first time and the first time after each fault; the waits between read as quiet ticks."""
    marks = cron.picture_marks(result)
    waited: set[str] = set()
    for i, e in enumerate(result.events):
        if e.replica == "harness" and e.event == "fault":
            waited.clear()
        if e.event != "log" or i in marks:
            continue
        for words, kind, label in (SENDS, TAKES, WAITS):
            if words in e.detail and not (words is WAITS[0] and e.replica in waited):
                marks[i] = (kind, label)
        if WAITS[0] in e.detail:
            waited.add(e.replica)
    return marks
