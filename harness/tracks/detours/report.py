"""The detours track's report: the cron track's tables, cells and picture marks, and the Redis
lock's own moments in its pictures: a lock that ran out in virtual time."""

from __future__ import annotations

from harness.engine.runner import RunResult
from harness.tracks.cron import report as cron

MATRIX_CAPTION = cron.MATRIX_CAPTION
LABELS = cron.LABELS
run_table, findings, cell = cron.run_table, cron.findings, cron.cell


def picture_marks(result: RunResult) -> dict[int, tuple[str, str]]:
    marks = cron.picture_marks(result)
    for i, e in enumerate(result.events):
        if e.event == "expired" and i not in marks:
            marks[i] = ("skip", f"lock expired: {e.detail.split(':')[0]}")
    return marks
