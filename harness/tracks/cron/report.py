"""What people look at for a cron-track run: payouts per slot, and a matrix cell."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from harness.engine.model.result import RunResult
from harness.engine.views.tables import BAD, GOOD, WARN, count, run_title
from harness.tracks.cron.picture import picture_marks, picture_state  # noqa: F401 (the report's)

RUN_WORD = "payout"  # what one run landing is, in `racelab explore`'s outcomes
MATRIX_CAPTION = "cells: runs landed for the slot (expected 1); red = duplicates"
LABELS = {  # the timeline's words for what the seams saw
    "sentinel": "summary thread",
    "notifications": "notification",
    "token_transactions": "coin credit",
    "threads": "thread",
    "worker_runs": "claim row",
    "threads (updated)": "zombie thread closed",
}


def run_table(result: RunResult) -> Table:
    v = result.verdict
    table = Table(
        title=run_title(result),
        caption=f"coins paid {v.coins_paid} of {v.coins_expected} expected · "
                f"{result.duration_s:.2f}s",
        title_justify="left", caption_justify="left",
    )
    table.add_column("job", no_wrap=True)
    table.add_column("slot", no_wrap=True)
    for name in ("expected", "runs", "duplicates", "missed"):
        table.add_column(name, justify="right")
    table.add_column("partial")
    table.add_column("received")
    for slot in v.slots:
        runs_style = BAD if slot.runs > slot.expected else (WARN if slot.runs < slot.expected
                                                            else GOOD)
        key = Text(slot.key)
        if slot.paid:  # a slot the run did not expect: its own finding, not a duplicate
            key.append(f" paid {slot.paid}", style=WARN)
        table.add_row(
            slot.job, key, str(slot.expected), Text(str(slot.runs), style=runs_style),
            count(slot.duplicates), count(slot.missed, bad_if_positive=False),
            Text(f"yes: {slot.why}", style=WARN) if slot.partial else Text("no", style=GOOD),
            received(slot),
        )
    return table


def received(slot, only: tuple[str, ...] | None = None) -> Text:
    """What each consumer received for the slot against one run's share, e.g. "notifications
    3 of 3, coins 90 of 30, threads 3 of 1"; red above, yellow below."""
    text = Text()
    for name, (got, want) in slot.received().items():
        if only is not None and name not in only:
            continue
        if text:
            text.append(", ")
        text.append(f"{name} {got} of {want}",
                    style=BAD if got > want else (WARN if got < want else GOOD))
    return text


WHEN = {"early": "the run ended before that slot fell due",
        "late": "that slot fell due before the run started"}


def findings(result: RunResult) -> list[Text]:
    """A slot paid outside the run's window, or a run a failover lost, in words (the table
    says the rest)."""
    found = [Text(f"{slot.key} paid {slot.paid}: {WHEN[slot.paid]}", style=WARN)
             for slot in result.verdict.slots if slot.paid]
    found += [Text(f"{slot.key}: {slot.lost} of its {slot.runs} runs "
                   f"{'was' if slot.lost == 1 else 'were'} lost in the failover: the old "
                   "primary acknowledged the COMMIT, the promoted standby never had it (counted: "
                   "its writer saw it committed)", style=WARN)
              for slot in result.verdict.slots if slot.lost]
    return found


def cell(result: RunResult) -> Text:
    """One matrix cell: payouts landed per slot, coloured by the verdict."""
    v = result.verdict
    text = Text(str(v.runs), style=BAD if v.duplicates else (WARN if v.missed else GOOD))
    if v.missed:
        text.append(f" ({v.missed} missed)", style=WARN)
    if outside := [slot.paid for slot in v.slots if slot.paid]:
        text.append(" (" + ", ".join(f"{outside.count(w)} paid {w}" for w in dict.fromkeys(
            outside)) + ")", style=WARN)
    if v.partial:
        text.append(" partial", style=WARN)
    return text
