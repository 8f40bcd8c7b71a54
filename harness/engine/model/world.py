"""What a run starts from and is judged by, as the engine sees every track's: `World` (the
seeded state, what acts on it from outside, the verdict) and `Verdict` (the counts every track
reports). Protocols, and a leaf: the run's loop, the run-control handle and the tracks all name
them.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from harness.engine.model.registry import Hook, Spec

if TYPE_CHECKING:
    import psycopg

    from harness.engine.model.history import Event


class Verdict(Protocol):
    """What landed against what should have: the counts every track reports."""

    runs: int
    expected: int
    duplicates: int
    missed: int
    partial: int
    overlapped: int  # runs of consecutive slots that ran at once (0 where a track cannot see it)

    def to_json(self) -> dict: ...


# in a world's env: the module whose tick(now) a replica's loop calls, where the app is not
# laid out as a stage (myapp.worker); the project track's
WORKER_ENV = "RACELAB_WORKER"


class World(Protocol):
    """What a run starts from, what acts on it from outside, and the verdict."""

    env: dict[str, str]  # extra environment for every replica process (WORKER_ENV among it)

    def due(self, t: datetime) -> list[Event]:
        """The world's own doings at virtual time t (after the faults due then struck)."""
        ...

    def check(self, conn: psycopg.Connection) -> Verdict: ...

    def close(self) -> None: ...

    # optional: the hooks of WORLD below, each with its default


# the shared state a reader of the run's history cares about (coins paid so far, claim rows,
# Redis keys), read after each tick that committed; None: the world keeps none
STATE = Hook("state", ("conn",), lambda world: lambda conn: None)
# after a run that ended cleanly, the world starts over for another run of the same scenario on
# the emptied database: seeded again, its own services emptied, its environment (`env`) kept,
# so an exploration's next replicas fork from the zygotes made for the first (harness.engine.
# explore.rig); False: it cannot, and the run opens a new world
AGAIN = Hook("again", ("conn", "scenario"), lambda world: lambda conn, scenario: False)
# the zone the replicas' apps read their clocks in, where the world configures one (a
# ZoneInfo: each start's `now` is sent as an ISO time with that zone's offset of the moment);
# None: the lab's own (scenario.TZ)
CLOCK_ZONE = Hook("clock_zone", None, lambda world: None)
WORLD = Spec("world", ("env", "due", "check", "close"), (STATE, AGAIN, CLOCK_ZONE))
