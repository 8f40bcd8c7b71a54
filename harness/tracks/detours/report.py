"""The detours track's report: the cron track's tables and picture marks, and cells that say
what the two consumers a detour may guard received: a dedup at the notifications shows as
"3 partial · notifications 3 of 3, coins 90 of 30"."""

from __future__ import annotations

from rich.text import Text

from harness.engine.model.result import RunResult
from harness.tracks.cron import report as cron

MATRIX_CAPTION = (cron.MATRIX_CAPTION + "; where a consumer received other than its share of "
                  "the runs, what the notifications and the coins received")
LABELS, RUN_WORD = cron.LABELS, cron.RUN_WORD
run_table, findings = cron.run_table, cron.findings
picture_marks, picture_state = cron.picture_marks, cron.picture_state
CONSUMERS = ("notifications", "coins")


def guarded(slot) -> bool:
    """Whether some consumer received other than one share per run: a detour held it back
    (or a run landed only part of itself)."""
    per_run = {name: want // max(slot.expected, 1) for name, (_, want) in slot.received().items()}
    return any(got != slot.runs * per_run[name] for name, (got, _) in slot.received().items()
               if name in CONSUMERS)


def cell(result: RunResult) -> Text:
    """The cron cell; where a consumer was held back, what the two consumers received."""
    text = cron.cell(result)
    for slot in result.verdict.slots:
        if slot.expected and guarded(slot):
            text.append(" · ")
            text.append_text(cron.received(slot, CONSUMERS))
    return text
