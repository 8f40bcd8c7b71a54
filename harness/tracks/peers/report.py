"""The peers track's report: the cron track's tables and cells, and in its pictures Celery
beat's decision to send the task, read from its log line in the history (the only record of it:
a library's choices are not SQL). RedBeat's lock is in the history as lock ops (peers/hooks.py),
drawn as any lock is: taken, refused and by whom, held until released or its lease runs out."""

from __future__ import annotations

from harness.engine.model.history import F, Op
from harness.engine.model.result import RunResult
from harness.tracks.cron import report as cron

MATRIX_CAPTION = cron.MATRIX_CAPTION
LABELS, RUN_WORD = cron.LABELS, cron.RUN_WORD
run_table, findings, cell, picture_state = cron.run_table, cron.findings, cron.cell, \
    cron.picture_state

SENDS = ("Scheduler: Sending due task", "won", "beat sends the task")


def picture_marks(result: RunResult, ops: list[Op]) -> dict[int, tuple[str, str]]:
    """The cron track's payout marks, and beat sending the task."""
    marks = cron.picture_marks(result, ops)
    for i, op in enumerate(ops):
        if op.f is F.LOG and i not in marks and SENDS[0] in str(op.value.get("text", "")):
            marks[i] = SENDS[1:]
    return marks
