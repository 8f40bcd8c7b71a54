"""Claim retention: a cleanup job that deletes claim rows, as teams add once the claim table
grows (good_job's cleanup of finished jobs is one such: bensheldon/good_job#731, #927).

A unique (job, slot) claim protects a slot only while its row exists. The cleanup here is the
operator's, not the stage's: at its time it deletes the claims older than its retention window,
from the harness's own session. Two kinds:

- claim-cleanup: the window is counted from when each claim was made, and is shorter than a
  late start can come (a replica's slow clock, a scheduler's retry): every claim made before
  the window is deleted, and a late start claims its slot again;
- claim-cleanup-by-slot: the fix: a claim is kept until its slot's week has passed, so the
  cleanup deletes only claims of weeks before the one it runs in.

Neither means anything for a stage with no claim table (00–02): the matrix shows "—" there.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from harness.engine.model.faults import FaultKind
from harness.engine.model.history import HARNESS, Event
from harness.errors import UserError

if TYPE_CHECKING:
    from harness.engine.model.control import RunControl
    from harness.engine.model.scenario import Fault, Scenario
    from harness.engine.model.stages import Stage

CLAIMS = "worker_runs"
RETENTION = timedelta(minutes=5)  # the lab's choice: shorter than the slow clock it meets


def has_claims(stage: Stage) -> bool:
    """Whether the stage's models declare the claim table (03 onwards)."""
    return any(f"__tablename__ = \"{CLAIMS}\"" in p.read_text()
               for p in (stage.path / "myapp").glob("models.py"))


class ClaimCleanup(FaultKind):
    name = "claim-cleanup"
    where = "env"
    track = "cron"
    needs_at = True
    summary = (f"at `at`, a retention job deletes the claim rows made more than "
               f"{RETENTION.seconds // 60} minutes before (every claim of the run so far, in "
               "the canonical scenario)")

    def applies_to(self, stage: Stage) -> bool:
        return stage.track == "cron" and has_claims(stage)

    def check_stage(self, stage: Stage, s: Scenario) -> None:
        if not self.applies_to(stage):
            raise UserError(f"scenario {s.name!r} deletes claim rows; {stage.path.name} has "
                            f"no claim table ({CLAIMS}: stages 03 to 05)")

    def strike(self, f: Fault, run: RunControl, t: datetime) -> list[Event]:
        # a claim's ran_at is the server's wall clock, not the run's virtual time: every claim
        # of a run was made before its cleanup's instant, more than RETENTION before in the
        # canonical scenario (A's at 18:00, the cleanup at 18:05), so all of them are deleted
        deleted = run.execute(f"DELETE FROM {CLAIMS}")
        return [Event(t, HARNESS, "fault",
                      f"claim-cleanup: the retention job deleted {deleted} claim row"
                      f"{'' if deleted == 1 else 's'} older than "
                      f"{RETENTION.seconds // 60} minutes")]


class ClaimCleanupBySlot(ClaimCleanup):
    name = "claim-cleanup-by-slot"
    summary = ("at `at`, a retention job deletes the claim rows of weeks before the current "
               "one: a claim lives as long as its slot can still be started")

    def strike(self, f: Fault, run: RunControl, t: datetime) -> list[Event]:
        year, week, _ = t.isocalendar()
        deleted = run.execute(f"DELETE FROM {CLAIMS} WHERE key < %s", (f"{year}-W{week:02d}",))
        return [Event(t, HARNESS, "fault",
                      f"claim-cleanup-by-slot: the retention job deleted {deleted} claim row"
                      f"{'' if deleted == 1 else 's'} of weeks before {year}-W{week:02d}")]


RETENTION_FAULTS = (ClaimCleanup(), ClaimCleanupBySlot())
