"""What one run gives: its stage and scenario, the verdict, the timeline, the history of ops,
the faults that never acted. Every view of a run (the table, the matrix cell, the pictures, the
JSON) reads a `RunResult`; harness.engine.run.runner makes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.engine.model import assumptions, axes
from harness.engine.model.history import ABORTS, Event, History
from harness.engine.model.scenario import Fault, Scenario, format_duration
from harness.engine.model.stages import Stage
from harness.engine.model.world import Verdict


@dataclass
class RunResult:
    stage: Stage
    scenario: Scenario
    verdict: Verdict
    events: list[Event]
    duration_s: float
    database: str
    kept: bool = False
    never_applied: tuple[tuple[Fault, str], ...] = ()  # faults that never acted, and why
    history: History | None = None  # every process's ops, and the shared state along them
    schedule: str | None = None  # in step mode: the schedule played (`racelab run --schedule`)
    settings: axes.Settings = ()  # the value of each run axis it was made with (none: no axes)

    @property
    def marks(self) -> list[assumptions.Mark]:
        """What the run's numbers rest on of the lab's choosing, as its matrix cell declares it;
        none for a run whose order was chosen (a person's in `step`, a `--schedule`): the
        forced overlap and the lab's order of waiters did not decide it."""
        return [] if self.schedule is not None else assumptions.of_run(self.stage,
                                                                         self.scenario)

    @property
    def aborted(self) -> int:
        """The transactions PostgreSQL aborted because of what others did at the same time
        (history.ABORTS): each COMMIT or statement it refused so."""
        return sum(1 for e in self.events if e.event == "refused")

    @property
    def not_retried(self) -> int:
        """Of those, the ones whose tick (or task) ended with the error: the stage's code did
        not run the transaction again."""
        return sum(1 for e in self.events if e.event in ("error", "commit-failed")
                   and e.data.get("sqlstate") in ABORTS)

    @property
    def column(self) -> tuple[str, axes.Settings]:
        """Its matrix column: its scenario's name and its axes' values."""
        return self.scenario.name, self.settings

    def to_json(self, with_events: bool = True) -> dict:
        v = self.verdict
        missing = dict(self.never_applied)
        data = {
            "stage": self.stage.name,
            "track": self.stage.track,
            "scenario": self.scenario.name,
            **({"settings": dict(self.settings)} if self.settings else {}),
            **({"world": {key: list(values) for key, values in self.scenario.world}}
               if self.scenario.world else {}),
            "seed": self.scenario.seed,
            "replicas": self.scenario.replicas,
            "offsets": {name: format_duration(offset) for name, offset in
                        zip(self.scenario.replica_names, self.scenario.offsets, strict=True)},
            **v.to_json(),
            "aborted": self.aborted, "aborted_not_retried": self.not_retried,
            "faults": [{**f.to_json(), "applied": f not in missing,
                        "why_not_applied": missing.get(f)} for f in self.scenario.faults],
            "marks": [m.to_json() for m in self.marks],
        }
        if with_events:
            data["events"] = [e.to_json() for e in self.events]
        if with_events and self.history is not None:
            data["history"], data["states"] = self.history.to_json()
        data["duration_s"] = round(self.duration_s, 3)
        if self.kept:
            data["database"] = self.database
        if self.schedule is not None:
            data["schedule"] = self.schedule
        return data
