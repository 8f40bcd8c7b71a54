"""The peers track: the cron track's weekly payout on real scheduler libraries (peers/NN-lib:
APScheduler, procrastinate, rq-scheduler, Celery beat alone and with RedBeat) instead of a
hand-made loop. It runs the cron track's canonical scenarios and counts with its checker, from
the same tables, so a peer's cells sit beside the stages'. Each run also gets a throwaway
redis-server (REDIS_URL) for the peers that keep their schedule or their broker in Redis
(nothing of a peer touches a shared Redis), and a temp dir of its own (BEAT_DIR) for what a
library keeps on local disk (Celery beat's schedule file), removed with the run.

A library is a long-running service that learns of the Friday slot before it comes, so in each
borrowed scenario the replicas boot one interval earlier than the cron track's (A at 17:45 for a
run whose A ticks at 18:00): every tick and fault of the cron scenario is still there. A replica
started after the slot is a deploy, a case of its own (APScheduler's re-added job then moves a
week on: tests/lab/test_peer_apps.py)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import psycopg
import redis

from harness.engine.model import registry
from harness.engine.model.faults import kind_of
from harness.engine.model.history import Event
from harness.engine.model.scenario import Scenario
from harness.engine.model.tracks import Track
from harness.infra.cleanup import lab_tempdir
from harness.infra.redis_server import RedisServer, start_redis_server
from harness.tracks.cron import TRACK as CRON
from harness.tracks.cron import CronWorld
from harness.tracks.peers import redelivery, report

TRACK_NAME = "peers"
LIBRARY_LOGGERS = ("apscheduler", "procrastinate", "rq", "rq_scheduler", "celery")


def _borrow(found: list[Scenario]) -> list[Scenario]:
    """The cron track's canonical scenarios here, the replicas booted one interval early; not
    one with a fault of the cron track's own (claim-cleanup deletes the stages' claim table,
    which the libraries' jobs here do not share), nor one that configures the stages' app (a
    [world] zone and close, the DST scenarios: each library's schedule is set in its own
    code)."""
    return [replace(s, track=TRACK_NAME, start=s.start - s.interval)
            for s in found if s.track == CRON.name and not s.world
            and all(kind_of(f).track in (None, TRACK_NAME) for f in s.faults)]


# Every key with a TTL moves by ARGV[1] ms, in one step on the server (one round trip an
# instant, however many keys the libraries keep); returns the keys whose TTL ran out.
_ADVANCE_TTLS = """
local ms, ran_out = tonumber(ARGV[1]), {}
for _, key in ipairs(redis.call('KEYS', '*')) do
  local left = redis.call('PTTL', key)
  if left > ms then
    redis.call('PEXPIRE', key, left - ms)
  elseif left > 0 then
    redis.call('DEL', key)
    table.insert(ran_out, key)
  end
end
return ran_out
"""


def advance_ttls(client: redis.Redis, passed: timedelta) -> list[str]:
    """PEXPIRE every key with a TTL by `passed`; delete those it runs out; their names."""
    ms = int(passed.total_seconds() * 1000)
    return sorted(key.decode() for key in client.eval(_ADVANCE_TTLS, 0, ms))


class PeerWorld(CronWorld):
    """The cron world, a redis-server of the run's own, and a temp dir for local files."""

    def __init__(self, conn: psycopg.Connection, s: Scenario, run_id: str):
        super().__init__(conn, s, run_id)
        self.server: RedisServer | None = start_redis_server()
        self.disk: Path | None = lab_tempdir("peers")  # `racelab clean` knows a stale one
        self.env = {"REDIS_URL": self.server.url, "BEAT_DIR": str(self.disk),
                    **redelivery.env(s)}
        self.redis = self.server.client()  # the world's own, closed with the server
        self.last: datetime | None = None

    def due(self, t: datetime) -> list[Event]:
        """Redis counts TTLs on its own clock: move them by the virtual time since the last
        instant, so a lock expires when the virtual clock passes its TTL."""
        passed, self.last = (t - self.last if self.last else None), t
        if not passed or self.server is None:
            return []
        ran_out = advance_ttls(self.redis, passed)
        return [Event(t, "redis", "expired", f"{key}: its TTL ran out in virtual time")
                for key in ran_out if "lock" in key]

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self.disk is not None:
            shutil.rmtree(self.disk, ignore_errors=True)
            self.disk = None


TRACK = registry.add_track(Track(
    name=TRACK_NAME,
    stage_dir="peers",  # peers/01-apscheduler … peers/05-celery-redbeat
    home=Path(__file__).resolve().parent,
    scenario_order=(*CRON.scenario_order, "visibility-redelivery"),
    default_scenario=CRON.default_scenario,
    open_world=PeerWorld,
    report=report,
    seams=replace(CRON.seams, loggers=("myapp", *LIBRARY_LOGGERS),
                  hooks="harness.tracks.peers.hooks"),  # a library's Redis lock (RedBeat's)
    borrow_scenarios=_borrow,
    faults=redelivery.FAULTS,
    world_keys=redelivery.WORLD_KEYS,
    check_world=redelivery.check,
    connections_per_replica=2,  # the app's pool, and the library's own (APScheduler, procrastinate)
    requires=("apscheduler", "procrastinate", "rq", "rq_scheduler", "celery", "redbeat",
              "time_machine"),
    install_hint="run `make setup` (it installs the peer libraries, `pip install -e '.[peers]'`)",
))
