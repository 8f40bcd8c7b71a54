"""One run: a fresh database, the replicas, the ticks in virtual-time order, the verdict.

Same-instant ticks are dispatched one replica at a time, each running until it is about to
end its transaction (held there), blocked on another's lock, or done; then all are released.
Every replica's transaction is open while the next one checks: the race is forced, not hoped
for, and the seed fixes who goes first.
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime
from multiprocessing.connection import wait

import psycopg

from harness import scheduler, services, worlds
from harness.clock import Tick, instants, tick_plan
from harness.errors import UserError
from harness.events import Event
from harness.faults import Fault, fault_times, restart_times, seam_faults
from harness.replica import Replica, ReplicaDied, schema_ddl
from harness.scenario import Scenario
from harness.stages import Stage

POOL_PER_REPLICA = 1  # a tick runs in one session, so one pooled connection per replica
HARNESS_CONNECTIONS = 2  # the run's own connection, and a replaced replica's overlap
TERMINATE_TIMEOUT_S = 5.0
BARRIER_TIMEOUT_S = 20.0  # only a true hang gets here: a lock wait is seen in pg_stat_activity
TICK_TIMEOUT_S = 60.0
HARNESS = "harness"


@dataclass
class RunResult:
    stage: Stage
    scenario: Scenario
    verdict: worlds.Verdict
    events: list[Event]
    duration_s: float
    database: str
    kept: bool = False
    findings: dict = field(default_factory=dict)

    def to_json(self, with_events: bool = True) -> dict:
        v = self.verdict
        data = {
            "stage": self.stage.name,
            "track": self.stage.track,
            "scenario": self.scenario.name,
            "seed": self.scenario.seed,
            "replicas": self.scenario.replicas,
            **v.to_json(),
        }
        if with_events:
            data["events"] = [e.to_json() for e in self.events]
        data["duration_s"] = round(self.duration_s, 3)
        if self.kept:
            data["database"] = self.database
        return data


def new_run_id() -> str:
    """Unique per run; the pid lets `racelab clean` tell a live run's database from a stale one."""
    return f"{os.getpid()}_{secrets.token_hex(3)}"


_DDL: dict[str, list[str]] = {}


def run(stage: Stage, scenario: Scenario, keep: bool = False) -> RunResult:
    started = time.perf_counter()
    pg = services.postgres()
    run_id = new_run_id()
    dbname = services.DB_PREFIX + run_id
    check_connections(pg.url, scenario.replicas)
    services.create_database(pg.url, dbname)
    try:
        url = services.app_url(pg.url, dbname)
        with psycopg.connect(services.libpq_url(url), autocommit=False) as conn:
            ddl = _DDL.get(str(stage.path)) or _DDL.setdefault(str(stage.path),
                                                              schema_ddl(stage.path))
            for statement in ddl:
                conn.execute(statement)
            conn.commit()
            world = worlds.open_world(stage.track, conn, scenario, run_id)
            try:
                conn.autocommit = True
                events = Fleet(stage, scenario, url, run_id, conn, world).play()
                verdict = world.check(conn)
            finally:
                world.close()
    finally:
        if not keep:
            services.drop_database(pg.url, dbname)
    return RunResult(stage, scenario, verdict, events, time.perf_counter() - started, dbname, keep)


def check_connections(admin_url: str, replicas: int) -> None:
    """Stop before creating or starting anything when the server cannot take the replicas."""
    limit, used = services.max_connections(admin_url)
    need = replicas * POOL_PER_REPLICA + HARNESS_CONNECTIONS
    if need > limit - used:
        raise UserError(
            f"PostgreSQL max_connections is {limit} and {used} are in use, so {limit - used} "
            f"are free; {replicas} replicas × {POOL_PER_REPLICA} pooled connection + "
            f"{HARNESS_CONNECTIONS} for the harness need {need}: lower --replicas or raise "
            "max_connections")


class Fleet:
    """The replicas of one run and the interpreter that plays the scenario on them."""

    def __init__(self, stage: Stage, s: Scenario, url: str, run_id: str,
                 conn: psycopg.Connection, world: worlds.World):
        self.stage = stage
        self.s = s
        self.conn = conn  # the harness's own connection to the run database
        self.world = world
        self.dbname = conn.info.dbname
        self.events: list[Event] = []
        self.url, self.run_id = url, run_id
        self.replicas = {name: Replica(name, stage.path, self.env(name))
                         for name in s.replica_names}
        self.scheduler = scheduler.for_stage(stage.path, s)
        self.tasks: dict[str, Replica] = {}  # the scheduler's one-shot task processes
        # Crash faults fire once each, in the first process that writes a payout row at or
        # after `at` (on the named replica, if any); one process is armed at a time.
        self.crashes = dict(enumerate(f for f in seam_faults(s.faults)
                                      if f.kind == "crash-after-first-write"))
        self.armed: dict[str, int] = {}
        self.kills = {(f.replica, f.at): f for f in s.faults
                      if f.kind in ("kill-mid-tick", "terminate-backend")}
        self.restarts = restart_times(s)

    def play(self) -> list[Event]:
        try:
            for r in self.replicas.values():
                r.start()
            for f in self.s.faults:
                if f.at is None:
                    self.events.append(Event(self.s.start, HARNESS, "fault", f.describe()))
            ticks = dict(instants(tick_plan(self.s, self.restarts), self.s.seed))
            agenda = {*ticks, *fault_times(self.s), *self._deliveries()}
            while agenda:  # retried deliveries join the agenda as they are scheduled
                t = min(agenda)
                agenda.discard(t)
                self._faults_due(t)
                batch = [*self._tasks_due(t), *ticks.get(t, [])]
                if batch:
                    self._instant(t, batch)
                agenda |= {when for when in self._deliveries() if when > t}
        finally:
            for r in [*self.replicas.values(), *self.tasks.values()]:
                r.stop()
        return self.events

    def _faults_due(self, t: datetime) -> None:
        """Faults acting from outside at time t: deploys replace processes; the world applies
        its own (a Redis outage, a proxy's latency); seam faults are armed per tick instead."""
        for f in self.s.faults:
            if f.kind == "deploy-restart" and f.at == t:
                names = [f.replica] if f.replica else list(self.replicas)
                for name in names:
                    r = self.replicas[name]
                    r.stop()
                    r.start()
                    self.events.append(Event(t, HARNESS, "fault",
                                             f"deploy: replica {name} replaced by a fresh process"))
        self.events.extend(self.world.due(t))

    def env(self, name: str) -> dict[str, str]:
        """The environment of one replica or task process."""
        return {
            "DATABASE_URL": self.url,
            "DB_POOL_SIZE": str(POOL_PER_REPLICA),
            "PGAPPNAME": f"racelab:{self.run_id}:{name}",
            "REPLICA": name,
            **self.world.env,
        }

    def _deliveries(self) -> set[datetime]:
        return self.scheduler.times() if self.scheduler else set()

    def _tasks_due(self, t: datetime) -> list[scheduler.Delivery]:
        """Start one fresh task process per delivery due at t (the scheduler's containers)."""
        if self.scheduler is None:
            return []
        due, events = self.scheduler.due(t)
        self.events.extend(events)
        for d in due:
            task = Replica(d.replica, self.stage.path, self.env(d.replica), task=d.command)
            task.start()
            self.tasks[d.replica] = task
        return due

    def _process(self, name: str) -> Replica:
        return self.replicas.get(name) or self.tasks[name]

    def _crash_armed(self, tick: Tick | scheduler.Delivery) -> bool:
        if self.armed:
            return False
        for i, fault in self.crashes.items():
            if fault.replica in (None, tick.replica) and tick.t >= fault.at:
                self.armed[tick.replica] = i
                self.events.append(Event(tick.t, HARNESS, "fault",
                                         f"armed {fault.describe()} in {tick.replica}"))
                return True
        return False

    def _kill_armed(self, tick: Tick) -> Fault | None:
        for (replica, at), fault in list(self.kills.items()):
            if replica == tick.replica and tick.t >= at:
                del self.kills[(replica, at)]
                return fault
        return None

    def _instant(self, t: datetime, batch: list[Tick]) -> None:
        """Play the ticks of one instant; their events are logged in dispatch order."""
        self._log = {tick.replica: [] for tick in batch}
        doomed = {tick.replica: f for tick in batch if (f := self._kill_armed(tick))}
        held: list[Replica] = []
        running: dict[str, Tick] = {}
        for tick in batch:
            r = self._process(tick.replica)
            hold = len(batch) > 1 or r.name in doomed
            r.send("tick", {"now": tick.now.isoformat(), "hold": hold,
                            "crash": self._crash_armed(tick)})
            running[r.name] = tick
            if hold:
                state = self._until_parked(r, tick)
                if state == "held":
                    held.append(r)
                elif state == "done":
                    del running[r.name]
        for r in held:
            if r.name not in doomed:
                r.send("release")
            elif doomed[r.name].kind == "kill-mid-tick":
                self._kill(r, running.pop(r.name))
            else:
                self._terminate(r, running[r.name])
        self._finish({self._process(name): tick for name, tick in running.items()})
        self.armed.clear()  # a crash that did not fire stays pending for the next process
        for entries in self._log.values():
            self.events.extend(entries)

    def _until_parked(self, r: Replica, tick: Tick) -> str:
        """Run r until it holds before its transaction ends, blocks on a lock, or finishes."""
        deadline = time.monotonic() + BARRIER_TIMEOUT_S
        while time.monotonic() < deadline:
            if wait([r.conn], timeout=0.01):
                msg = r.recv(0)
                if msg[0] == "held":
                    return "held"
                self._record(r, tick, msg)
                return "done"
            if self._blocked(r):
                self._log[r.name].append(Event(tick.t, r.name, "blocked",
                                         "waits for another replica's lock"))
                return "blocked"
        self._log[r.name].append(Event(tick.t, r.name, "barrier",
                                 f"neither ended nor blocked in {BARRIER_TIMEOUT_S:.0f}s; let go"))
        return "timeout"

    def _blocked(self, r: Replica) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM pg_stat_activity WHERE datname = %s AND application_name = %s "
            "AND wait_event_type = 'Lock'", (self.dbname, r.app_name)).fetchone()
        return row is not None

    def _finish(self, running: dict[Replica, Tick]) -> None:
        """Let every released replica run to the end of its tick, in whatever order the
        database lets them; one that holds again (its next transaction) is let go at once."""
        by_conn = {r.conn: r for r in running}
        deadline = time.monotonic() + TICK_TIMEOUT_S
        while by_conn:
            ready = wait(list(by_conn), timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                names = ", ".join(sorted(r.name for r in by_conn.values()))
                raise ReplicaDied(f"replicas {names} did not finish a tick in {TICK_TIMEOUT_S}s")
            for conn in ready:
                r = by_conn[conn]
                msg = r.recv(0)
                if msg[0] == "held":
                    r.send("release")
                    continue
                self._record(r, running[r], msg)
                del by_conn[conn]

    def _kill(self, r: Replica, tick: Tick) -> None:
        """SIGKILL inside the open transaction; PostgreSQL rolls it back. The orchestrator
        restarts the container: a fresh process takes the replica's place at once."""
        r.kill()
        self._log[r.name][:0] = [
            Event(tick.t, r.name, "tick", "killed before its transaction ended", "unknown"),
            Event(tick.t, HARNESS, "fault", f"kill-mid-tick: SIGKILL replica {r.name} "
                                            "while its transaction is open"),
        ]
        r.start()

    def _terminate(self, r: Replica, tick: Tick) -> None:
        """pg_terminate_backend on the replica's connection inside its open transaction, then
        let the replica go on: its COMMIT meets a dead connection, an outcome it cannot know."""
        pids = [row[0] for row in self.conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND application_name = %s "
            "AND pid <> pg_backend_pid()", (self.dbname, r.app_name))]
        self.conn.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid",
                          (pids,))
        deadline = time.monotonic() + TERMINATE_TIMEOUT_S
        while self.conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = ANY(%s)",
                                (pids,)).fetchone():
            if time.monotonic() > deadline:
                raise ReplicaDied(f"the backend of replica {r.name} outlived "
                                  f"pg_terminate_backend by {TERMINATE_TIMEOUT_S:.0f}s")
        self._log[r.name].append(Event(
            tick.t, HARNESS, "fault", f"terminate-backend: pg_terminate_backend on replica "
                                      f"{r.name}'s connection while its transaction is open"))
        r.send("release")

    def _record(self, r: Replica, tick: Tick | scheduler.Delivery, msg: tuple) -> None:
        _, outcome, notes = msg
        detail = "" if tick.now == tick.t else f"its clock reads {tick.now:%H:%M:%S}"
        entries = self._log[r.name]
        entries.insert(0, Event(tick.t, r.name, "tick", detail, outcome))
        entries.extend(Event(tick.t, r.name, kind, text) for kind, text in notes)
        fired = any(kind == "fault" and text.startswith("crash-after-first-write")
                    for kind, text in notes)
        if fired and r.name in self.armed:
            del self.crashes[self.armed.pop(r.name)]
        if isinstance(tick, scheduler.Delivery):
            entries[0] = Event(tick.t, r.name, "task", " ".join(tick.command), outcome)
            entries.extend(self.scheduler.finished(tick, outcome))
            r.stop()
