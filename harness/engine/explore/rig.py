"""Where an exploration's schedules run, one after another: one database, one connection of
the harness's, and a zygote per replica, kept from one schedule to the next.

A schedule is a whole run, and most of a short run's cost is fixed: a database emptied
(TRUNCATE gives every table new files, and every session rebuilds what it knew of them), the
harness's connections opened, each replica's stage imported and its pool opened. A rig pays
those once. Between schedules it wipes the database as rundb does a database it hands out
again (`rundb.wipe`: DELETE, children before parents, every sequence back at its start), on
its own connection. Each schedule's replicas are
fresh processes forked from the zygotes (harness.engine.run.zygote), never a process that ticked
before. The world is kept too where it can start over (harness.engine.model.world's `again`:
the alerts track's Redis server and webhook sink, emptied), so the replicas' environment stays
the same. A world that cannot, and whose environment changes from run to run (a fault's Redis
pair or proxy), gets replicas from the forkserver instead, as any run does.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import psycopg

from harness.engine.model import registry
from harness.engine.model.scenario import Scenario
from harness.engine.model.stages import Stage
from harness.engine.model.world import AGAIN, World
from harness.engine.run import runner
from harness.engine.run.zygote import Zygote
from harness.infra import rundb, services


class Rig:
    def __init__(self, stage: Stage, s: Scenario):
        self.stage = stage
        track = registry.track(stage.track)
        self.rules = track.seams
        self.pg = services.postgres()
        runner.check_connections(self.pg.url, s.replicas, track.connections_per_replica)
        self.dbname = rundb.acquire(self.pg.url, runner.ddl_of(stage))
        self.url = services.app_url(self.pg.url, self.dbname)
        self.zygotes: dict[str, Zygote] = {}
        self.kept: World | None = None  # the last run's world
        self.forking = True  # False once the replicas' environment changed between runs
        self.wipes = 0
        self.conn: psycopg.Connection | None = None
        self.failed = False
        self.stray = False  # sessions of a run that stopped midway may linger
        try:
            self.conn = psycopg.connect(services.libpq_url(self.url), autocommit=True)
            self.tables = rundb.delete_order(self.conn)
        except BaseException:
            self.close(failed=True)
            raise
        self.used = False

    def fresh(self) -> psycopg.Connection:
        """The harness's connection to the emptied database, in a transaction (the world's
        seed commits it)."""
        assert self.conn is not None
        conn = self.conn
        conn.autocommit = True
        if self.stray:  # the last run stopped midway: its killed replicas' sessions go first
            _end_other_sessions(conn)
            self.stray = False
        if self.used:
            self.wipes += 1
            rundb.wipe(conn, self.tables, self.wipes)
        self.used = True
        conn.autocommit = False
        return conn

    def zygote(self, name: str, env: dict[str, str]) -> Zygote | None:
        """The zygote replica `name` forks from (its env less PGAPPNAME, which each child sets),
        or None: start it from the forkserver."""
        shared = {k: v for k, v in env.items() if k != "PGAPPNAME"}
        z = self.zygotes.get(name)
        if not self.forking:
            return None
        if z is not None and z.env != shared:  # a world of its own per run: nothing to keep
            self.forking = False
            self._close_zygotes()
            return None
        if z is None:
            z = self.zygotes[name] = Zygote(self.stage.path, shared, self.rules)
        return z

    def world(self, open_world: Callable[[psycopg.Connection, Scenario, str], World],
              conn: psycopg.Connection, s: Scenario, run_id: str) -> World:
        """The last run's world started over, where it can be; else a new one."""
        if self.kept is not None:
            if AGAIN.of(self.kept)(conn, s):
                return self.kept
            self._close_world()
        self.kept = open_world(conn, s, run_id)
        return self.kept

    def lost(self) -> None:
        """A schedule failed midway (a limit, a race replayed otherwise, an error): its replicas
        were killed, but a session waiting on a lock learns that only once its wait ends, so the
        next wipe first ends them all; what the database holds is unknown: drop it at close."""
        self.failed = True
        self.stray = True
        self._close_world()  # what its services hold is unknown too

    def close(self, failed: bool = False) -> None:
        self._close_world()
        self._close_zygotes()
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        if failed or self.failed:
            rundb.discard(self.pg.url, self.dbname)
        else:
            rundb.release(self.pg.url, self.dbname)

    def _close_world(self) -> None:
        if self.kept is not None:
            world, self.kept = self.kept, None
            world.close()

    def _close_zygotes(self) -> None:
        for z in self.zygotes.values():
            z.close()
        self.zygotes.clear()


def _end_other_sessions(conn: psycopg.Connection) -> None:
    """End every session on this database but `conn`'s, and wait until they are gone."""
    ended = "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> " \
            "pg_backend_pid()"
    conn.execute(f"SELECT pg_terminate_backend(pid) FROM ({ended}) AS s")
    for _ in range(1000):  # each ends at its next check for interrupts: within milliseconds
        if conn.execute(ended).fetchone() is None:
            return
        time.sleep(0.01)
