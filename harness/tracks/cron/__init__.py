"""The cron track: a weekly payout that several replicas' own loops (or a scheduler) start.
Its one registration: stages at the checkout's root (00-the-bug … 05-eventbridge)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import psycopg

from harness.engine.model import registry
from harness.engine.model.history import Event
from harness.engine.model.scenario import Scenario
from harness.engine.model.tracks import SeamRules, Track
from harness.tracks.cron import checker, report, schedule, world
from harness.tracks.cron.data_faults import DATA_FAULTS
from harness.tracks.cron.failover import FAILOVER_FAULTS
from harness.tracks.cron.retention import RETENTION_FAULTS
from harness.tracks.cron.standby import ReplicaLag


class CronWorld:
    """A seeded community database; nothing acts on it from outside during the run. A scenario
    that configures the app's zone or close (harness.tracks.cron.schedule) tells the replicas
    in their environment, and their clocks read in that zone."""

    def __init__(self, conn: psycopg.Connection, s: Scenario, run_id: str):
        close = schedule.of(s)
        self.expectation = world.seed(conn, s)
        self.env: dict[str, str] = dict(close.env)
        self.clock_zone = close.zone if close.configured else None
        # rows a PostgreSQL failover lost (harness.tracks.cron.failover)
        self.lost_payouts = checker.PayoutRows()
        self.claims_table: bool | None = None  # whether the stage has one (checker.has_claims)

    def lose_payouts(self, rows: checker.PayoutRows) -> None:
        """Rows their writers saw committed, then lost: the verdict counts them too."""
        self.lost_payouts = self.lost_payouts + rows

    def due(self, t: datetime) -> list[Event]:
        return []

    def check(self, conn: psycopg.Connection) -> checker.PayoutVerdict:
        return checker.check(conn, self.expectation, self.lost_payouts)

    def state(self, conn: psycopg.Connection) -> dict:
        if self.claims_table is None:  # the stage's tables stay as its schema made them
            self.claims_table = checker.has_claims(conn)
        return checker.state(conn, self.claims_table)

    def close(self) -> None:
        pass


def _find_race(stage, max_examples: int, settings: tuple = ()):
    from harness.tracks.cron import search  # hypothesis: imported only when searching

    return search.find_race(stage, max_examples, settings)


TRACK = registry.add_track(Track(
    name="cron",
    stage_dir="",  # its stages sit at the checkout's root: 00-the-bug … 05-eventbridge
    home=Path(__file__).resolve().parent,
    scenario_order=("simultaneous", "staggered", "silent-failure", "crash-after-claim",
                    "deploy-restart", "kill-mid-tick", "clock-skew", "double-delivery",
                    "runtask-refused", "week", "pause", "claim-cleanup", "dst-fall-back",
                    "dst-spring-forward", "replica-lag", "standby-failover"),
    default_scenario="staggered",
    open_world=CronWorld,
    report=report,
    faults=(*DATA_FAULTS, *RETENTION_FAULTS, ReplicaLag(), *FAILOVER_FAULTS),
    world_keys=schedule.WORLD_KEYS,
    check_world=schedule.check,
    seams=SeamRules(
        claim_table="worker_runs",
        sentinel=r"FROM threads\b.*threads\.title =",
        crash_tables=frozenset({"worker_runs", "notifications", "token_transactions", "threads"}),
    ),
    find_race=_find_race,
    steppable=True,  # its stages share only PostgreSQL: every shared access is a statement
))
