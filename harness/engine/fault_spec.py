"""A fault as a scenario states it: which kind, when, on which replica. Data, and a leaf: the
scenario parser, the run's loop and the fault kinds (harness.engine.faults) all name it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Fault:
    kind: str
    at: datetime | None = None
    replica: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"kind": self.kind, "replica": self.replica,
                "at": self.at.isoformat() if self.at else None}
