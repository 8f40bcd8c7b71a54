"""The alerts track's world: seeded creators and services, an alert sink, a throwaway Redis.

The world seeds what the scenario's [world] table names, starts the sink (the webhook and the
sandbox provider) and a redis-server of its own (a primary/replica pair and a proxy in front
when a fault needs them), applies the Redis faults and the stuck-job flood when they are due,
and hands the checker the sink's record. Keys live under `racelab:<run id>:` (the first run's,
in a world an exploration keeps from one schedule to the next: `again`).
"""

from __future__ import annotations

import socket
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

import psycopg
import redis

from harness.engine.model.clock import tick_plan
from harness.engine.model.faults import kind_of, restart_times
from harness.engine.model.history import Event
from harness.engine.model.scenario import Scenario
from harness.errors import UserError
from harness.fault_tools.failover import FailoverPair, start_failover_pair
from harness.fault_tools.proxy import TcpProxy
from harness.infra.redis_server import RedisServer, start_redis_server
from harness.tracks.alerts import checker as ac
from harness.tracks.alerts.sink import AlertSink

SLOW_LATENCY_S = 3.0  # Redis answers this late under redis-slow
CLIENT_TIMEOUT_S = 1.5  # the 01 app's Redis timeout, for the finding's wording
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
        self._clients: dict[int, redis.Redis] = {}
        self._start_over()
        try:
            _seed(conn, s)
            self.sink = AlertSink().start()
            needs = {need for f in s.faults for need in getattr(kind_of(f), "needs", ())}
            self.primary = self._start_redis(needs)
            url = self.front.url if self.front else self.primary.url
            self.env = {
                "ALERT_WEBHOOK_URL": self.sink.alerts_url,
                "SANDBOX_API_URL": self.sink.sandboxes_url,
                "REDIS_URL": url,
                "REDIS_KEY_PREFIX": self.prefix,
            }
        except BaseException:
            self.close()
            raise

    def _start_over(self) -> None:
        """What a run learns as it goes, back at its start."""
        self.marks: list[_Mark] = []
        self.flooded: set[int] = set()  # which of the scenario's stuck-job floods have struck
        self.lost: dict[str, str] = {}  # claims on the old primary missing from the promoted one
        self.failed_over = False
        self.slow_since: datetime | None = None
        self.down_since: datetime | None = None
        self.tried_while_down = 0  # connections the app attempted while Redis was down
        self._down_from = 0
        self.synced: dict[str, datetime | None] = {}  # each workspace's synced_at, last read
        self.written: dict[datetime, datetime] = {}  # window → when its rows first showed

    def again(self, conn: psycopg.Connection, s: Scenario) -> bool:
        """Another run of the same scenario after one that ended cleanly (an exploration's next
        schedule; every replica of the last has ended, its calls answered): seeded again on the
        emptied database, Redis and the sink emptied, the same addresses and key prefix. Not
        with a fault's pair or proxy: their state is the fault's doing."""
        if s != self.s or self.pair is not None or self.front is not None:
            return False
        self.conn = conn
        self._start_over()
        _seed(conn, s)
        self._client().flushall()
        self.sink.clear()
        return True

    # -- set-up ------------------------------------------------------------------------------

    def _start_redis(self, needs: set[str]) -> RedisServer:
        """A server, or a primary/replica pair when a fault needs one; a proxy in front of it
        when a fault acts on the app's connection."""
        try:
            if "pair" in needs:
                self.pair = start_failover_pair()
                primary = self.pair.primary
            else:
                self.server = primary = start_redis_server()
        except FileNotFoundError as e:
            raise UserError(f"the alerts track starts a Redis server of its own for each run: {e}"
                            ) from None
        if needs:
            self.front = TcpProxy(primary.address).start()
        return primary

    # -- what the faults do to it (harness.tracks.alerts.faults strikes) ---------------------

    def due(self, t: datetime) -> list[Event]:
        """Expire claims whose window ended; mark the sink and the proxy before t's ticks."""
        self._expire(t)
        self._read_rows(t)
        self.marks.append(_Mark(t, time.perf_counter(), self.sink.listing_count(),
                                self.front.accepted if self.front else 0))
        return []

    def _read_rows(self, t: datetime) -> None:
        """Note the window of each workspace row a pass wrote since the last read (its
        synced_at), the first time the database shows it: with the sink's listings, when each
        pass began and by when it had written (`ac.overlaps`). Only where workspaces are seeded."""
        if not dict(self.s.world).get("workspaces"):
            return
        rows = dict(self.conn.execute("SELECT id, synced_at FROM workspaces").fetchall())
        self.conn.commit()
        for ws, synced in rows.items():
            if synced is not None and synced != self.synced.get(ws):
                self.written.setdefault(ac.window_start(synced.astimezone(t.tzinfo)), t)
        self.synced = rows

    def flood(self, index: int, t: datetime) -> datetime:
        """The index-th stuck-job flood: its jobs started STUCK_AFTER before t; when."""
        started = t - ac.STUCK_AFTER
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO background_jobs (id, name, started_at) VALUES (%s, %s, %s)",
                [(job, f"export-{job}", started) for job in ac.flood_ids(index)])
        self.conn.commit()
        return started

    def go_down(self, t: datetime) -> None:
        """Redis stops answering: the app's address still takes each connection, so the attempt
        is counted, and drops it at once, as nothing answers behind it."""
        self.down_since = t
        self._down_from = self.front.accepted
        self.front.repoint(_nowhere())

    def fail_over(self) -> str:
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
        # each listing is of the window its replica's clock meant at that instant, as the
        # expected windows are (a skewed clock lists a window of its own, not a second one)
        clocks = {(tick.t, tick.replica): tick.now for tick in self.ticks}
        listings = self.sink.listings()
        listed: Counter[datetime] = Counter()
        first: dict[datetime, tuple[datetime, str]] = {}  # each window's first listing
        for mark, after in zip(self.marks, [*self.marks[1:], end], strict=True):
            for item in listings[mark.listings:after.listings]:
                window = ac.window_start(clocks.get((mark.t, item.replica), mark.t))
                listed[window] += 1
                first.setdefault(window, (mark.t, item.replica))
        self._read_rows(self.s.end)
        overlaps = ac.overlaps(first, self.written)
        findings = {"overlap": self._overlap_finding(overlaps)} if overlaps else {}
        if self.slow_since is not None:
            findings["redis-slow"] = self._slow_finding(
                [(m, a) for m, a in zip(self.marks, [*self.marks[1:], end], strict=True)
                 if m.t in ticked and m.t >= self.slow_since])
        if self.failed_over:
            findings["redis-failover"] = self._failover_finding()
        # accepted duplicates: those of failing open, while Redis was down (if the app tried it)
        # or after a failover lost the claim; never those of per-process memory
        if self.down_since is not None:
            self.tried_while_down = self.front.accepted - self._down_from
        names = [k[len(self.prefix):] for k in self.lost]
        lost = {n.removeprefix("alert:") for n in names if n.startswith("alert:")}
        return ac.verdict(ac.expected_alerts(self.s, self.ticks), self.sink.sent_by_key(),
                          ac.expected_windows(self.ticks), listed, findings,
                          fail_open=self.tried_while_down > 0, lost=lost,
                          overlapped={o.window for o in overlaps})

    def _overlap_finding(self, overlaps: list[ac.Overlap]) -> dict:
        o = overlaps[0]
        stale = sorted(ws for ws, synced in self.synced.items() if synced is not None
                       and ac.window_start(synced.astimezone(o.window.tzinfo)) == o.window)
        kept = (f"; {', '.join(stale)} still hold{'s' * (len(stale) == 1)} its listing of "
                f"{o.listed_at:%H:%M}, written over the later one" if stale else "")
        why = (f"{o.by}'s pass of the window {_span(o.window)} listed at {o.listed_at:%H:%M} and "
               f"its rows were not in the database until {o.written_by:%H:%M}, while "
               f"{o.next_by}'s pass of {_span(o.next_window)} listed at "
               f"{o.next_listed_at:%H:%M}: the two passes ran at once{kept}")
        return {"overlaps": [x.to_json() for x in overlaps], "explanation": why}

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

    def state(self, conn: psycopg.Connection) -> dict:
        """What a reader of the history cares about: the alerts delivered so far, per key, and
        the run's Redis keys with their TTLs in ms (-1: none; null: Redis unreachable)."""
        sent = self.sink.sent_by_key()
        try:
            client = self._client()
            keys = {raw.decode()[len(self.prefix):]: client.pttl(raw)
                    for raw in sorted(client.scan_iter(match=self.prefix + "*"))}
        except redis.RedisError:
            keys = None
        return {"deliveries": sum(sent.values()), "by_key": dict(sorted(sent.items())),
                "redis_keys": keys}

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
            old, _, old_at = before.partition("@")
            new, _, new_at = now.decode().partition("@") if now is not None else ("", "", "")
            claims.append({"key": key[len(self.prefix):], "old_primary": old,
                           "old_primary_at": old_at or None, "new_primary": new or None,
                           "new_primary_at": new_at or None})
        if claims:
            first = claims[0]
            taken = (f"so {first['new_primary']} claimed it again"
                     if first["new_primary"] else "and nobody has claimed it since")
            why = (f"the claim {first['key']} = {first['old_primary']}@{first['old_primary_at']} "
                   "written on the primary "
                   f"never reached the replica (its replication link was cut first); after "
                   f"promotion the key was gone, {taken} and the alert was sent again: "
                   "the cost of failing open, which the lab extends to a lost claim")
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


def _span(window: datetime) -> str:
    return f"{window:%H:%M}–{window + ac.RECONCILE_EVERY:%H:%M}"


def _nowhere() -> tuple[str, int]:
    """An address where nothing listens: a port the system just gave out and took back."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()


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
