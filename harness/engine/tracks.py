"""A track's world: what a run starts from, what acts on it from outside, and the verdict.

The cron track's world is a seeded community database; the alerts track adds Redis, a
webhook sink and the faults that act on them. The runner only knows this interface.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

import psycopg

from harness import checker, fixtures
from harness.events import Event
from harness.scenario import Scenario


class Verdict(Protocol):
    runs: int
    expected: int
    duplicates: int
    missed: int
    partial: int

    def to_json(self) -> dict: ...


class World(Protocol):
    env: dict[str, str]  # extra environment for every replica process

    def due(self, t: datetime) -> list[Event]:
        """Apply the world's own faults due at virtual time t; return them as events."""
        ...

    def check(self, conn: psycopg.Connection) -> Verdict: ...

    def close(self) -> None: ...


class CronWorld:
    def __init__(self, conn: psycopg.Connection, s: Scenario):
        self.expectation = fixtures.seed(conn, s)
        self.env: dict[str, str] = {}

    def due(self, t: datetime) -> list[Event]:
        return []

    def check(self, conn: psycopg.Connection) -> checker.Verdict:
        return checker.check(conn, self.expectation)

    def close(self) -> None:
        pass


def open_world(track: str, conn: psycopg.Connection, s: Scenario, run_id: str) -> World:
    if track == "cron":
        return CronWorld(conn, s)
    if track == "alerts":
        from harness.alerts_world import AlertsWorld

        return AlertsWorld(conn, s, run_id)
    raise ValueError(f"no world for track {track!r}")
