"""The run's history: what each replica attempted and how it ended, and when faults struck."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime


@dataclass(frozen=True)
class Event:
    t: datetime  # virtual time (the true one; a skewed replica's own clock goes in detail)
    replica: str  # "A", "B", … or "harness" for faults and lifecycle
    event: str  # tick, lock, claim, sentinel, write, log, commit, rollback, error, fault, …
    detail: str = ""
    outcome: str = ""  # for ticks: ok, failed or unknown

    def to_json(self) -> dict[str, str]:
        data = asdict(self)
        data["t"] = self.t.isoformat()
        if not self.outcome:
            del data["outcome"]
        return data
