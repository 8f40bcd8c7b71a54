"""The peers track's report: the cron track's tables and cells, and in its pictures the
library's own decisions about the slot, read from its log lines in the history (the only record
of them: a library's choices are not SQL): Celery beat sending the task, RedBeat's lock taken,
or found taken (a beat waiting for it)."""

from __future__ import annotations

from harness.engine.history import F, Op
from harness.engine.result import RunResult
from harness.tracks.cron import report as cron

MATRIX_CAPTION = cron.MATRIX_CAPTION
LABELS, RUN_WORD = cron.LABELS, cron.RUN_WORD
run_table, findings, cell, picture_state = cron.run_table, cron.findings, cron.cell, \
    cron.picture_state

SENDS = ("Scheduler: Sending due task", "won", "beat sends the task")
TAKES = ("beat: Acquired lock", "won", "lock ✓ (RedBeat)")
WAITS = ("beat: lock taken", "refused", "lock ✗ → waits (RedBeat)")
STRIKES = {F.FAULT, F.KILL, F.RESTART, F.PAUSE, F.RESUME, F.TERMINATE}


def picture_marks(result: RunResult, ops: list[Op]) -> dict[int, tuple[str, str]]:
    """The cron track's payout marks, and the library's decisions. A beat's wait is marked the
    first time and the first time after each fault; the waits between read as quiet ticks."""
    marks = cron.picture_marks(result, ops)
    waited: set[str] = set()
    for i, op in enumerate(ops):
        if op.f in STRIKES:
            waited.clear()
        if op.f is not F.LOG or i in marks:
            continue
        line = str(op.value.get("text", ""))
        for words, kind, label in (SENDS, TAKES, WAITS):
            if words in line and not (words is WAITS[0] and op.process in waited):
                marks[i] = (kind, label)
        if WAITS[0] in line:
            waited.add(op.process)
    return marks
