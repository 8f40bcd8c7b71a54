"""The detours track's world: the cron world, and a redis-server of the run's own whose TTLs
follow the virtual clock (as the peers'). A scenario whose fault needs a failover gets a
primary and a replica instead (harness.fault_tools.failover), the app reaching them through a proxy,
and the replica's link cut from the start: whatever the app writes stays on the primary."""

from __future__ import annotations

from datetime import datetime

import psycopg
import redis

from harness.engine.model.faults import kind_of
from harness.engine.model.history import Event
from harness.engine.model.scenario import Scenario
from harness.errors import UserError
from harness.fault_tools.failover import FailoverPair, start_failover_pair
from harness.fault_tools.proxy import TcpProxy
from harness.infra.redis_server import RedisServer, start_redis_server
from harness.tracks.cron import CronWorld
from harness.tracks.peers import advance_ttls


def seed_fence(conn: psycopg.Connection) -> None:
    """A fencing detour's resource row, as earlier weeks' payouts left it (token 0 stands for
    'older than any this run's counter hands out'); nothing for an app without the table."""
    if conn.execute("SELECT to_regclass('fencing_tokens')").fetchone()[0] is not None:
        conn.execute("INSERT INTO fencing_tokens (resource, token) VALUES ('leaderboard_close', 0)")
    conn.commit()


class DetourWorld(CronWorld):
    def __init__(self, conn: psycopg.Connection, s: Scenario, run_id: str):
        super().__init__(conn, s, run_id)
        seed_fence(conn)
        self.server: RedisServer | None = None
        self.pair: FailoverPair | None = None
        self.front: TcpProxy | None = None
        self.lost: list[str] = []  # keys on the old primary that the promoted one lacks
        self.last: datetime | None = None
        self.started: list[Event] = []
        try:
            if any("pair" in getattr(kind_of(f), "needs", ()) for f in s.faults):
                self.pair = start_failover_pair()
                self.front = TcpProxy(self.pair.primary.address).start()
                self.pair.cut_link()
                self.primary = self.pair.primary
                url = self.front.url
                self.started.append(Event(s.start, "redis", "fault", "the replica's replication "
                                          "link is down: what the app writes stays on the "
                                          "primary"))
            else:
                self.server = self.primary = start_redis_server()
                url = self.server.url
        except FileNotFoundError as e:
            self.close()
            raise UserError(f"the detours track starts a Redis server of its own for each run: "
                            f"{e}") from None
        except BaseException:
            self.close()
            raise
        self.env = {"REDIS_URL": url}
        self.client: redis.Redis = self.primary.client()

    def due(self, t: datetime) -> list[Event]:
        """Move the current primary's TTLs by the virtual time since the last instant, so a
        lock expires when the virtual clock passes its timeout."""
        passed, self.last = (t - self.last if self.last else None), t
        events, self.started = self.started, []
        if passed:
            events += [Event(t, "redis", "expired", f"{key}: its TTL ran out in virtual time")
                       for key in advance_ttls(self.client, passed)]
        return events

    def fail_over(self) -> list[str]:
        """Promote the replica and re-point the app at it; the keys the promotion lost."""
        old, new = self.client, self.pair.replica.client()
        self.lost = sorted(k.decode() for k in old.scan_iter() if not new.exists(k))
        self.pair.fail_over(self.front)
        old.close()
        self.client, self.primary = new, self.pair.replica
        return self.lost

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
            self.client = None
        for part in (self.front, self.pair, self.server):
            if part is not None:
                part.stop()
        self.front = self.pair = self.server = None
