"""The peers track: the cron track's weekly payout on real scheduler libraries (peers/NN-lib:
APScheduler, procrastinate, rq-scheduler) instead of a hand-made loop. It runs the cron track's
canonical scenarios and counts with its checker, from the same tables, so a peer's cells sit
beside the stages'. Each run also gets a throwaway redis-server (REDIS_URL) for the peers that
keep their schedule in Redis; nothing of a peer touches a shared Redis.

A library is a long-running service that learns of the Friday slot before it comes, so in each
borrowed scenario the replicas boot one interval earlier than the cron track's (A at 17:45 for a
run whose A ticks at 18:00): every tick and fault of the cron scenario is still there. Booted at
the slot's very instant, each library here computes its next fire time after it and skips the
slot (their cron arithmetic excludes the present)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import psycopg
import redis

from harness.engine import registry
from harness.engine.events import Event
from harness.engine.scenario import Scenario
from harness.engine.tracks import Track
from harness.infra.redis_server import RedisServer, start_redis_server
from harness.tracks.cron import TRACK as CRON
from harness.tracks.cron import CronWorld

TRACK_NAME = "peers"
LIBRARY_LOGGERS = ("apscheduler", "procrastinate", "rq", "rq_scheduler")


def _borrow(found: list[Scenario]) -> list[Scenario]:
    """The cron track's canonical scenarios here, the replicas booted one interval early."""
    return [replace(s, track=TRACK_NAME, start=s.start - s.interval)
            for s in found if s.track == CRON.name]


def advance_ttls(client: redis.Redis, passed: timedelta) -> list[str]:
    """PEXPIRE every key with a TTL by `passed`; delete those it runs out; their names."""
    ms = int(passed.total_seconds() * 1000)
    ran_out = []
    for key in client.scan_iter():
        left = client.pttl(key)
        if left > ms:
            client.pexpire(key, left - ms)
        elif left > 0:
            client.delete(key)
            ran_out.append(key.decode())
    return sorted(ran_out)


class PeerWorld(CronWorld):
    """The cron world, and a redis-server of the run's own."""

    def __init__(self, conn: psycopg.Connection, s: Scenario, run_id: str):
        super().__init__(conn, s, run_id)
        self.server: RedisServer | None = start_redis_server()
        self.env = {"REDIS_URL": self.server.url}
        self.last: datetime | None = None

    def due(self, t: datetime) -> list[Event]:
        """Redis counts TTLs on its own clock: move them by the virtual time since the last
        instant, so a lock expires when the virtual clock passes its TTL."""
        passed, self.last = (t - self.last if self.last else None), t
        if not passed or self.server is None:
            return []
        ran_out = advance_ttls(self.server.client(), passed)
        return [Event(t, "redis", "expired", f"{key}: its TTL ran out in virtual time")
                for key in ran_out if "lock" in key]

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


TRACK = registry.add_track(Track(
    name=TRACK_NAME,
    stage_dir="peers",  # peers/01-apscheduler, peers/02-procrastinate, peers/03-rq-scheduler
    home=Path(__file__).resolve().parent,
    scenario_order=CRON.scenario_order,
    default_scenario=CRON.default_scenario,
    open_world=PeerWorld,
    report=CRON.report,
    seams=replace(CRON.seams, loggers=("myapp", *LIBRARY_LOGGERS)),
    borrow_scenarios=_borrow,
    connections_per_replica=2,  # the app's pool, and the library's own (APScheduler, procrastinate)
    requires=("apscheduler", "procrastinate", "rq_scheduler", "time_machine"),
    install_hint="run `make setup` (it installs the peer libraries, `pip install -e '.[peers]'`)",
))
