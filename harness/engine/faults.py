"""The catalogue of faults from the story, each applied from outside the stage code.

A fault is data (kind, when, which replica). Where it acts is decided here:
- "data" faults change the seeded database before the replicas start;
- "seam" faults arm a hook inside a replica process for its first tick at or after `at`;
- "process" faults are carried out by the runner on the replica's OS process;
- "env" faults are applied by the track's world to what surrounds the replicas (Redis, load).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class FaultKind:
    name: str
    where: str  # data, seam, process or env
    summary: str
    needs_at: bool = False
    needs_replica: bool = False
    track: str | None = None  # the only track it applies to; None: any


CATALOGUE: dict[str, FaultKind] = {
    kind.name: kind
    for kind in [
        FaultKind(
            "section-missing",
            "data",
            'the "general" section does not exist, so post_thread writes nothing',
        ),
        FaultKind(
            "bot-missing",
            "data",
            "the bot user does not exist, so post_thread writes nothing",
        ),
        FaultKind(
            "deploy-restart",
            "process",
            "the replica (every replica if none is named) is replaced by a fresh process; "
            "its ticks restart from its boot",
            needs_at=True,
        ),
        FaultKind(
            "kill-mid-tick",
            "process",
            "SIGKILL the replica inside its first transaction at or after `at`; "
            "the orchestrator restarts it",
            needs_at=True,
            needs_replica=True,
        ),
        FaultKind(
            "terminate-backend",
            "process",
            "pg_terminate_backend on the replica's connection inside its first transaction at "
            "or after `at`; its COMMIT fails and the process goes on",
            needs_at=True,
            needs_replica=True,
        ),
        FaultKind(
            "crash-after-first-write",
            "seam",
            "the job raises right after its first write of a payout row, once: in the first "
            "process (the named replica's, if one is named) that writes one at or after `at`",
            needs_at=True,
        ),
        FaultKind(
            "duplicate-delivery",
            "process",
            "the scheduler delivers the slot at `at` twice: two task processes at once "
            "(stages whose jobs a scheduler starts)",
            needs_at=True,
        ),
        FaultKind(
            "redis-down",
            "env",
            "Redis refuses every connection from `at` (the whole run if no time is given)",
            track="alerts",
        ),
        FaultKind(
            "redis-slow",
            "env",
            "Redis answers 3 s late from `at` (the whole run if no time is given), "
            "beyond the app's 1.5 s timeout",
            track="alerts",
        ),
        FaultKind(
            "redis-link-cut",
            "env",
            "the Redis replica's replication link is cut at `at` (from the start if no time "
            "is given): claims written after it never reach the replica",
            track="alerts",
        ),
        FaultKind(
            "redis-failover",
            "env",
            "the Redis replica is promoted to primary and the app re-pointed at it",
            needs_at=True,
            track="alerts",
        ),
        FaultKind(
            "stuck-job-flood",
            "env",
            "600 background jobs become stuck at `at` (started 15 minutes before, never finished)",
            needs_at=True,
            track="alerts",
        ),
    ]
}


@dataclass(frozen=True)
class Fault:
    kind: str
    at: datetime | None = None
    replica: str | None = None

    def describe(self) -> str:
        parts = [self.kind]
        if self.replica:
            parts.append(f"on {self.replica}")
        if self.at:
            parts.append(f"at {self.at:%a %H:%M:%S}")
        return " ".join(parts)


def data_faults(faults: tuple[Fault, ...]) -> set[str]:
    return {f.kind for f in faults if CATALOGUE[f.kind].where == "data"}


def seam_faults(faults: tuple[Fault, ...]) -> list[Fault]:
    return [f for f in faults if CATALOGUE[f.kind].where == "seam"]


def restart_times(s) -> dict[str, list[datetime]]:
    """When each replica boots again because a deploy replaced it (its tick phase restarts)."""
    boots: dict[str, list[datetime]] = {}
    for f in s.faults:
        if f.kind == "deploy-restart" and f.at is not None:
            for name in [f.replica] if f.replica else s.replica_names:
                boots.setdefault(name, []).append(f.at)
    return boots


def fault_times(s) -> set[datetime]:
    """Instants at which something acts from outside (beyond the replicas' own ticks)."""
    return {f.at for f in s.faults
            if f.at is not None and CATALOGUE[f.kind].where in ("process", "env")}
