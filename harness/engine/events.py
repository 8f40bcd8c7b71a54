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

    def to_json(self) -> dict:
        data: dict = asdict(self)
        data["t"] = self.t.isoformat()
        if not self.outcome:
            del data["outcome"]
        if self.event == "write":
            data["writes"] = writes(self.detail)
        return data


def writes(detail: str) -> list[dict]:
    """A write event's rows per table: '3 token_transactions, 1 threads (updated)' →
    [{table: token_transactions, rows: 3, updated: false}, {table: threads, rows: 1, …}]."""
    found = []
    for chunk in detail.split(", "):
        n, _, table = chunk.partition(" ")
        name, updated = table.removesuffix(" (updated)"), table.endswith(" (updated)")
        found.append({"table": name, "rows": int(n), "updated": updated})
    return found
