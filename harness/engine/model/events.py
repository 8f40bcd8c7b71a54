"""The run's history: what each replica attempted and how it ended, and when faults struck."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

HARNESS = "harness"  # the process of the harness's own lines (faults, lifecycle)


@dataclass(frozen=True)
class Event:
    t: datetime  # virtual time (the true one; a skewed replica's own clock goes in detail)
    replica: str  # "A", "B", … or "harness" for faults and lifecycle
    event: str  # tick, lock, claim, sentinel, write, log, commit, rollback, error, fault, …
    detail: str = ""
    outcome: str = ""  # for ticks: ok, failed or unknown
    # what the event says as data, for whatever reads it (the words in detail are for people):
    # a write's {"writes": [{table, rows, updated}]}; a fault's {"fault": its name as shown,
    # "on": [(replica, act)]}, act one of kill, restart, pause, resume, none
    data: dict = field(default_factory=dict, compare=False)

    def to_json(self) -> dict:
        data: dict = {"t": self.t.isoformat(), "replica": self.replica, "event": self.event,
                      "detail": self.detail}
        if self.outcome:
            data["outcome"] = self.outcome
        if self.event == "write":
            data["writes"] = self.data["writes"]
        return data

