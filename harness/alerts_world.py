"""The alerts track's world: seeded creators and services, an alert sink, a throwaway Redis.

The world seeds what the scenario's [world] table names, starts the sink (the webhook and the
sandbox provider) and a redis-server of its own (a primary/replica pair and a proxy in front
when a fault needs them), applies the Redis faults and the stuck-job flood when they are due,
and hands the checker the sink's record. Keys live under `racelab:<run id>:`.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

import psycopg
import redis

from harness import alerts_checker as ac
from harness.clock import tick_plan
from harness.errors import UserError
from harness.events import Event
from harness.failover import FailoverPair, start_failover_pair
from harness.faults import CATALOGUE, Fault, restart_times
from harness.proxy import TcpProxy
from harness.redis_server import RedisServer, start_redis_server
from harness.scenario import Scenario
from harness.sink import AlertSink

HARNESS = "harness"
SLOW_LATENCY_S = 3.0  # Redis answers this late under redis-slow
CLIENT_TIMEOUT_S = 1.5  # the 01 app's Redis timeout, for the finding's wording
NEEDS_PAIR = {"redis-link-cut", "redis-failover"}
NEEDS_FRONT = {"redis-down", "redis-slow", *NEEDS_PAIR}
LOW_CREDITS = 40  # below the app's threshold of 100


@dataclass(frozen=True)
class _Mark:
    """The sink and the proxy as they stood when a moment's ticks were about to run."""

    t: datetime
    clock: float
    listings: int
    attempts: int


class AlertsWorld:
    def __init__(self, conn: psycopg.Connection, s: Scenario, run_id: str):
        self.s = s
        self.conn = conn
        self.prefix = f"racelab:{run_id}:"
        self.ticks = tick_plan(s, restart_times(s))
        self.sink: AlertSink | None = None
        self.server: RedisServer | None = None
        self.pair: FailoverPair | None = None
        self.front: TcpProxy | None = None
        self.marks: list[_Mark] = []
        self.lost: dict[str, str] = {}  # claims on the old primary missing from the promoted one
        self.failed_over = False
        self.slow_since: datetime | None = None
        self._clients: dict[int, redis.Redis] = {}
        try:
            _seed(conn, s)
            self.sink = AlertSink().start()
            self.primary = self._start_redis({f.kind for f in s.faults})
            url = self.front.url if self.front else self.primary.url
            self.env = {
                "ALERT_WEBHOOK_URL": self.sink.alerts_url,
                "SANDBOX_API_URL": self.sink.sandboxes_url,
                "REDIS_URL": url,
                "REDIS_KEY_PREFIX": self.prefix,
            }
            for f in self._env_faults():
                if f.at is None:  # the runner logs these at the start
                    self._apply(f, s.start, conn)
        except BaseException:
            self.close()
            raise

    # -- set-up ------------------------------------------------------------------------------

    def _start_redis(self, kinds: set[str]) -> RedisServer:
        try:
            if kinds & NEEDS_PAIR:
                self.pair = start_failover_pair()
                primary = self.pair.primary
            else:
                self.server = primary = start_redis_server()
        except FileNotFoundError as e:
            raise UserError(f"the alerts track starts a Redis server of its own for each run: {e}"
                            ) from None
        if kinds & NEEDS_FRONT:
            self.front = TcpProxy(primary.address).start()
        return primary

    def _env_faults(self) -> list[Fault]:
        return [f for f in self.s.faults if CATALOGUE[f.kind].where == "env"]

    # -- faults ------------------------------------------------------------------------------

    def due(self, t: datetime) -> list[Event]:
        events = [Event(t, HARNESS, "fault", self._apply(f, t, self.conn))
                  for f in self._env_faults() if f.at == t]
        self._expire(t)
        self.marks.append(_Mark(t, time.perf_counter(), self.sink.listing_count(),
                                self.front.accepted if self.front else 0))
        return events

    def _apply(self, f: Fault, t: datetime, conn: psycopg.Connection) -> str:
        """Carry out one fault; return what happened, for the run's event log."""
        if f.kind == "redis-down":
            self.front.close()
            return "redis-down: the address the app uses for Redis refuses every connection"
        if f.kind == "redis-slow":
            self.front.set_latency(SLOW_LATENCY_S)
            self.slow_since = t
            return (f"redis-slow: Redis answers {SLOW_LATENCY_S:g} s late "
                    f"(the app waits at most {CLIENT_TIMEOUT_S:g} s per attempt)")
        if f.kind == "redis-link-cut":
            self.pair.cut_link()
            return ("redis-link-cut: the replica's replication link is cut; "
                    "claims from now on stay on the primary only")
        if f.kind == "redis-failover":
            return self._fail_over()
        if f.kind == "stuck-job-flood":
            index = [g for g in self.s.faults if g.kind == f.kind].index(f)
            started = t - ac.STUCK_AFTER
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO background_jobs (id, name, started_at) VALUES (%s, %s, %s)",
                    [(job, f"export-{job}", started) for job in ac.flood_ids(index)])
            conn.commit()
            return (f"stuck-job-flood: {ac.FLOOD_JOBS} background jobs started at "
                    f"{started:%H:%M} have not finished: each one is stuck now")
        raise ValueError(f"{f.kind} is not a fault of the alerts world")

    def _fail_over(self) -> str:
        pair = self.pair
        if pair.link.listening:  # no cut before: whatever the primary has reaches the replica
            pair.wait_in_sync()
        old = self._client()
        new = pair.replica.client()
        mine = [k.decode() for k in old.scan_iter(match=self.prefix + "*")]
        self.lost = {k: old.get(k).decode() for k in mine if not new.exists(k)}
        pair.fail_over(self.front)
        self.primary = pair.replica
        self.failed_over = True
        lost = f"{len(self.lost)} claim{'s' if len(self.lost) != 1 else ''}"
        return (f"redis-failover: the replica is promoted (REPLICAOF NO ONE) and the app "
                f"re-pointed at it; {lost} written on the old primary "
                f"{'are' if len(self.lost) != 1 else 'is'} not on it")

    def _expire(self, t: datetime) -> None:
        """Redis TTLs run on real time; a claim whose window ended in virtual time goes now."""
        client = self._client()
        for raw in client.scan_iter(match=self.prefix + "*"):
            key = raw.decode()
            ends = _window_end(key[len(self.prefix):], client.get(raw))
            if ends is not None and ends <= t:
                client.delete(raw)

    # -- verdict -----------------------------------------------------------------------------

    def check(self, conn: psycopg.Connection) -> ac.AlertsVerdict:
        end = _Mark(self.s.end, time.perf_counter(), self.sink.listing_count(),
                    self.front.accepted if self.front else 0)
        ticked = {tick.t for tick in self.ticks}
        listed: Counter[datetime] = Counter()
        for mark, after in zip(self.marks, [*self.marks[1:], end], strict=True):
            if after.listings > mark.listings:
                listed[ac.window_start(mark.t)] += after.listings - mark.listings
        findings = {}
        if self.slow_since is not None:
            findings["redis-slow"] = self._slow_finding(
                [(m, a) for m, a in zip(self.marks, [*self.marks[1:], end], strict=True)
                 if m.t in ticked and m.t >= self.slow_since])
        if self.failed_over:
            findings["redis-failover"] = self._failover_finding()
        return ac.verdict(ac.expected_alerts(self.s, self.ticks), self.sink.sent_by_key(),
                          ac.expected_windows(self.ticks), listed, findings)

    def _slow_finding(self, spans: list[tuple[_Mark, _Mark]]) -> dict:
        seconds = sum(after.clock - mark.clock for mark, after in spans)
        attempts = sum(after.attempts - mark.attempts for mark, after in spans)
        finding = {"ticks": len(spans), "tick_s": round(seconds, 3), "attempts": attempts,
                   "latency_s": SLOW_LATENCY_S, "timeout_s": CLIENT_TIMEOUT_S}
        if attempts:
            per = seconds / attempts
            finding["wait_per_attempt_s"] = round(per, 3)
            finding["explanation"] = (
                f"{len(spans)} tick(s) took {seconds:.2f} s for {attempts} Redis attempts: "
                f"{per:.2f} s per attempt against a {CLIENT_TIMEOUT_S:g} s timeout, while Redis "
                f"answered {SLOW_LATENCY_S:g} s late; each claim gave up and the app went ahead")
        else:
            finding["explanation"] = (f"{len(spans)} tick(s) took {seconds:.2f} s and made no "
                                      "Redis attempt: this stage does not use Redis")
        return finding

    def _client(self) -> redis.Redis:
        """The harness's own connection to the current primary (not through the app's proxy)."""
        if self.primary.port not in self._clients:
            self._clients[self.primary.port] = self.primary.client()
        return self._clients[self.primary.port]

    def _failover_finding(self) -> dict:
        client = self._client()
        claims = []
        for key, before in sorted(self.lost.items()):
            now = client.get(key)
            claims.append({"key": key[len(self.prefix):], "old_primary": before,
                           "new_primary": now.decode() if now is not None else None})
        if claims:
            first = claims[0]
            taken = (f"so {first['new_primary'].split('@')[0]} claimed it again"
                     if first["new_primary"] else "and nobody has claimed it since")
            why = (f"the claim {first['key']} = {first['old_primary']} written on the primary "
                   f"never reached the replica (its replication link was cut first); after "
                   f"promotion the key was gone, {taken} and the alert was sent again: "
                   "the accepted cost of failing open")
        else:
            mine = list(client.scan_iter(match=self.prefix + "*"))
            why = ("no claim was lost: the replica had every key of the primary when it was "
                   "promoted" if mine else
                   "no claim was lost, because this stage writes none to Redis: its duplicates "
                   "come from per-process memory, not from the failover")
        return {"lost_claims": claims, "explanation": why}

    def close(self) -> None:
        for part in (self.front, self.pair, self.server, self.sink):
            if part is not None:
                part.stop()
        self.front = self.pair = self.server = self.sink = None


def _seed(conn: psycopg.Connection, s: Scenario) -> None:
    """Only what the scenario names: every check runs on every tick, so stray rows alert."""
    world = dict(s.world)
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO creators (id, name, credits, app_published) VALUES (%s, %s, %s, true)",
            [(c, f"creator-{c}", LOW_CREDITS) for c in world.get("low_credits", ())])
        cur.executemany("INSERT INTO services (name, status) VALUES (%s, 'down')",
                        [(name,) for name in world.get("services_down", ())])
        cur.executemany("INSERT INTO workspaces (id, state) VALUES (%s, 'unknown')",
                        [(ws,) for ws in world.get("workspaces", ())])
    conn.commit()


def _window_end(name: str, value: bytes | None) -> datetime | None:
    """When a claim's window ends in virtual time: `alert:<kind>:<subject>` holds
    `<replica>@<now>`; `reconcile:<window start>` names its window."""
    try:
        if name.startswith("alert:") and value is not None:
            kind = name.split(":")[1]
            claimed = datetime.fromisoformat(value.decode().rsplit("@", 1)[1])
            return claimed + ac.DEDUP_WINDOWS[kind]
        if name.startswith("reconcile:"):
            return datetime.fromisoformat(name.split(":", 1)[1]) + ac.RECONCILE_EVERY
    except (KeyError, IndexError, ValueError, redis.RedisError):
        return None
    return None
