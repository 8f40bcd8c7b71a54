"""The replicas of one run and the interpreter that plays the scenario on them.

At each instant of the agenda (the schedulers' starts and the faults' times): the faults due
strike, the world does its part, then the starts due run, as the run's `Interleaver` plays
them through the instant's handle, a `Moment`. The default, `HOLD_BEFORE_COMMIT`, is the
fleet's barrier: same-instant starts are dispatched one at a time, each running until it is
about to end its transaction (held there), blocked on another's lock, or done; then all are
released. Step mode (harness.engine.explore.steps) is the other: a statement at a time.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from multiprocessing.connection import wait

import psycopg

from harness import interrupts
from harness.engine.inside.messages import Done, Held
from harness.engine.inside.messages import Tick as TickMessage
from harness.engine.model import axes, schedulers
from harness.engine.model.control import RunServer
from harness.engine.model.faults import AT_END, SeamCrash
from harness.engine.model.history import HARNESS, Event, F, History, Type, stamp
from harness.engine.model.scenario import Fault, Scenario
from harness.engine.model.schedulers import ADDED, WAKE, Scheduler, Start
from harness.engine.model.stages import Stage
from harness.engine.model.tracks import NO_RULES, SeamRules
from harness.engine.model.world import CLOCK_ZONE, STATE, World
from harness.engine.run import waits
from harness.engine.run.armed_faults import ArmedFault, RunFaults
from harness.engine.run.fleet_control import FleetControl
from harness.engine.run.interleave import HOLD_BEFORE_COMMIT, Interleaver, Moment
from harness.engine.run.replica import Replica
from harness.engine.run.tick_text import tick_entries
from harness.errors import UserError
from harness.infra import services

POOL_PER_REPLICA = 1  # a tick runs in one session, so one pooled connection per replica
BARRIER_TIMEOUT_S = 20.0  # only a true hang gets here: a lock wait is seen in pg_stat_activity
TICK_TIMEOUT_S = 60.0
STUCK_CHECK_S = 1.0  # how often a tick that has not ended is checked for a wait that never can
STOP = threading.Event()  # Ctrl-C while runs go on in other threads: each stops and cleans up


@contextmanager
def stopping_together() -> Iterator[None]:
    """Runs going on side by side in threads (a matrix's cells, an exploration's workers) that
    stop together: whoever sets STOP (one of them failing, Ctrl-C) stops them all at their next
    instant. Once all have stopped the flag is lowered again, so a run made later in the same
    process (a test's, the pytest plugin's) plays; after Ctrl-C it stays up, as the command is
    over and the next run must not start."""
    if interrupts.fired():  # a Ctrl-C whose KeyboardInterrupt a finaliser swallowed
        raise KeyboardInterrupt
    STOP.clear()
    try:
        yield
    finally:
        if not interrupts.fired():
            STOP.clear()


class Agenda:
    """The instants still to play, earliest first: a time joins once, and only while it is
    later than the instant last taken (a scheduler that gives all its times each call, not
    only the new ones, adds nothing twice)."""

    def __init__(self, times: Iterable[datetime]):
        self._heap: list[datetime] = []
        self._queued: set[datetime] = set()
        self._now: datetime | None = None
        self.add(times)

    def add(self, times: Iterable[datetime]) -> None:
        for t in times:
            if t not in self._queued and (self._now is None or t > self._now):
                self._queued.add(t)
                heapq.heappush(self._heap, t)

    def next(self) -> datetime:
        self._now = heapq.heappop(self._heap)
        self._queued.discard(self._now)
        return self._now

    def __bool__(self) -> bool:
        return bool(self._heap)


class Fleet:
    """The replicas of one run and the interpreter that plays the scenario on them."""

    def __init__(self, stage: Stage, s: Scenario, url: str, run_id: str,
                 conn: psycopg.Connection, world: World, rules: SeamRules = NO_RULES,
                 forks=None, interleaver: Interleaver = HOLD_BEFORE_COMMIT,
                 settings_env: dict[str, str] | None = None, server: RunServer | None = None,
                 states: bool = True):
        self.stage = stage
        self.s = s
        self.conn = conn  # the harness's own connection to the run database
        self.reconnected: psycopg.Connection | None = None  # one it opened after a failover
        self.after_tick: dict[str, list[Event]] = {}  # lines a fault left for a tick's end
        self.world = world
        self.rules = rules
        self.dbname = conn.info.dbname
        self.events: list[Event] = []
        self.history = History()
        self.since = 0
        self.log: dict[str, list[Event]] = {}  # the current instant's events, per process
        self.url, self.run_id = url, run_id
        self.settings_env = settings_env or {}  # what the run axes' values add (model.axes)
        self.server = server  # the run's own PostgreSQL, where a fault started one
        self.states = states  # the shared state is read after each commit (a view shows it)
        # forks: harness.engine.explore.rig
        self.replicas = {name: Replica(name, stage.path, env, rules,
                                       zygote=forks and forks.zygote(name, env))
                         for name in s.replica_names for env in [self.env(name)]}
        self.schedulers = schedulers.for_run(stage.path, s)
        self.tasks: dict[str, Replica] = {}  # one-shot task processes a scheduler started
        self.owner: dict[str, Scheduler] = {}  # which scheduler started each task
        self.faults = RunFaults(s.faults)  # each fault's own state in this run
        # A tick a fault keeps held (its transaction open: a pause, a slow payout) waits out of
        # the instants until the fault resumes it; ticks that block on its locks wait with it.
        self.kept: dict[str, tuple[Replica, Start]] = {}
        self.waiting: dict[str, tuple[Replica, Start]] = {}
        self.began: dict[str, datetime] = {}  # while resuming: when each such tick began
        self.resumed_at = 0  # while resuming: the stamp it began at (ops before: at `began`)
        self.on_instant = None  # called with (starts done, virtual time) after each instant
        self.interleaver = interleaver  # who moves when among an instant's starts
        self.control = FleetControl(self)  # what the faults' hooks act through

    def play(self) -> list[Event]:
        try:
            for a in self.faults.all:  # a fault without a time acts from the start
                if a.fault.at is None:
                    self._strike(a, self.s.start)
                    a.applied = True
            for r in self.replicas.values():  # started side by side, each ready before a tick
                r.spawn()
            for r in self.replicas.values():
                r.wait_ready()
            self.events += [Event(self.s.start, HARNESS, "fault", a.kind.describe(a.fault))
                            for a in self.faults.all if a.fault.at is None]
            agenda = Agenda(self.faults.acting_times())
            agenda.add(t for sc in self.schedulers for t in ADDED.of(sc)())
            done = 0
            while agenda:  # retried deliveries join the agenda as they are scheduled
                if STOP.is_set():
                    raise KeyboardInterrupt
                t = agenda.next()
                self._faults_due(t)
                batch = self._starts_due(t)
                if batch:
                    self._instant(t, batch)
                    done += len(batch)
                    if self.on_instant:
                        self.on_instant(done, t)
                agenda.add(when for sc in self.schedulers for when in ADDED.of(sc)())
            for a in self.faults.unapplied():
                why = a.kind.why_not_applied(a.fault, self.s)
                self.events.append(Event(self.s.end, HARNESS, "fault",
                                         f"{a.kind.describe(a.fault)} never applied: {why}"))
        finally:
            for r, _ in self.kept.values():
                r.resume()
            processes = [*self.replicas.values(), *self.tasks.values()]
            for r in processes:  # told side by side, then each waited for
                r.tell_to_stop()
            for r in processes:
                r.stop()
        return self.events

    def reconnect(self) -> None:
        """The run's server has a new primary: the harness's own session opens anew, at the
        same address (the run's database URL)."""
        if self.reconnected is not None:
            self.reconnected.close()
        self.conn = self.reconnected = psycopg.connect(services.libpq_url(self.url),
                                                       autocommit=True)

    def close(self) -> None:
        """Close the connection the fleet opened itself (the one it was given is its owner's)."""
        if self.reconnected is not None:
            self.reconnected.close()
            self.reconnected = None

    def never_applied(self) -> list[tuple[Fault, str]]:
        """The scenario's faults that never acted, each with why."""
        return self.faults.never_applied(self.s)

    def _faults_due(self, t: datetime) -> None:
        """Faults acting from outside at time t strike (a deploy, a Redis outage); then the
        world does its part. Seam faults are armed per tick instead."""
        for a in self.faults.acting_at(t):
            self.events.extend(self._strike(a, t))
            if not a.kind.interrupts(a.fault):  # one that interrupts acts on a held tick
                a.applied = True
        self.events.extend(self.world.due(t))

    def _strike(self, a: ArmedFault, t: datetime) -> list[Event]:
        """The fault strikes; one that records no ops of its own is one `fault` interval."""
        f, own = a.fault, a.kind.records_ops
        if not own:
            self.history.add(f.kind, Type.INVOKE, F.FAULT, t, f.to_json())
        events = a.kind.strike(f, self.control, t)
        if not own:
            self.history.add(f.kind, Type.OK, F.FAULT, t, f.to_json())
        return events

    def env(self, name: str) -> dict[str, str]:
        """The environment of one replica or task process."""
        env = {
            "DATABASE_URL": self.url,
            "DB_POOL_SIZE": str(POOL_PER_REPLICA),
            "PGAPPNAME": f"racelab:{self.run_id}:{name}",
            "REPLICA": name,
            **(self.server.env(self.dbname) if self.server else {}),
            **self.world.env,
        }
        for key, text in self.settings_env.items():  # a run axis's (model.axes)
            env[key] = axes.join(env, key, text)
        return env

    def _starts_due(self, t: datetime) -> list[Start]:
        """Every scheduler's starts at t; one fresh task process per start with a command."""
        batch: list[Start] = []
        zone = CLOCK_ZONE.of(self.world)
        for sc in self.schedulers:
            due, events = sc.due(t)
            if zone is not None:  # each start's clock read as its app reads it
                due = [replace(d, now=d.now.astimezone(zone)) for d in due]
            self.events.extend(events)
            for d in due:
                self.history.add("scheduler", Type.INFO, F.SCHEDULE, t,
                                 {"start": d.replica, "now": d.now.isoformat()})
            for d in due:
                if d.command is not None:
                    task = Replica(d.replica, self.stage.path, self.env(d.replica), self.rules,
                                   task=d.command)
                    task.start()
                    self.tasks[d.replica] = task
                    self.owner[d.replica] = sc
            batch += due
        return batch

    def process(self, name: str) -> Replica:
        return self.replicas.get(name) or self.tasks[name]

    def armed_crash(self, tick: Start) -> SeamCrash | None:
        """What the seam fault armed in this start's process raises after, if one is."""
        a = self.faults.arm_seam(tick.replica, tick.t)
        if a is None:
            return None
        self.events.append(Event(tick.t, HARNESS, "fault",
                                 f"armed {a.kind.describe(a.fault)} in {tick.replica}"))
        self.history.add(a.fault.kind, Type.INFO, F.FAULT, tick.t,
                         {**a.fault.to_json(), "armed_in": tick.replica})
        return a.kind.seam_crash(a.fault, self.rules.crash_tables)

    def _instant(self, t: datetime, batch: list[Start]) -> None:
        """Play the starts of one instant, as the interleaver says."""
        self.interleaver.instant(Moment(self, t, batch))

    def barrier(self, t: datetime, batch: list[Start]) -> None:
        """Dispatch the starts one at a time, each until it holds before its transaction ends,
        blocks or ends; then release them all. Their events are logged in dispatch order."""
        doomed = {tick.replica: a for tick in batch
                  if (a := self.faults.take_interrupt(tick.replica, tick.t))}
        held: list[Replica] = []
        blocked: list[str] = []
        running: dict[str, Start] = {}
        for tick in batch:
            r = self.process(tick.replica)
            if r.name in self.kept or r.name in self.waiting:
                self.log[r.name].append(Event(tick.t, r.name, "tick", "paused: it does not run",
                                              "skipped"))
                self.history.add(r.name, Type.INVOKE, F.TICK, tick.t, {"now": tick.now.isoformat()})
                self.history.add(r.name, Type.FAIL, F.TICK, tick.t, {"skipped": "paused"})
                continue
            hold = len(batch) > 1 or r.name in doomed or bool(self.kept)
            self.history.add(r.name, Type.INVOKE, F.TICK if tick.command is None else F.TASK,
                             tick.t, {"now": tick.now.isoformat(), "hold": hold})
            r.send(TickMessage(tick.now.isoformat(), hold, self.armed_crash(tick),
                               at=doomed[r.name].kind.hold_at if r.name in doomed else AT_END))
            running[r.name] = tick
            if hold:
                state = self._until_held(r, tick)
                if state == "held":
                    held.append(r)
                elif state == "done":
                    del running[r.name]
                elif state == "blocked":
                    blocked.append(r.name)
        for name, a in doomed.items():
            if a.kind.waits_for_transaction and all(r.name != name for r in held):
                self.faults.wait_again(a)  # it lands on the replica's next tick
        for r in held:
            if r.name in doomed:
                self._interrupt(doomed[r.name], r, running)
            else:
                r.release()
        for name in blocked if self.kept else []:  # it may wait on a kept replica's lock
            self.waiting[name] = (self.process(name), running.pop(name))
        self._finish({self.process(name): tick for name, tick in running.items()})
        self.end_instant()

    def end_instant(self) -> None:
        """The instant is over: a seam fault armed in it is disarmed, its events logged."""
        self.faults.disarm()
        for entries in self.log.values():
            self.events.extend(entries)

    def _interrupt(self, a: ArmedFault, r: Replica, running: dict[str, Start]) -> None:
        """The fault acts on r, held in its tick; a tick it killed or kept held leaves the
        instant (a kept one waits in `kept` until the fault resumes it), and one it left held
        goes on, as if the fault had not been there."""
        self.control.acts.clear()
        acted = a.kind.interrupt(a.fault, self.control, r.name, running[r.name].t)
        if acted is not False:  # False: it let the tick go untouched
            a.applied = True
        act = self.control.acts.pop(r.name, None)
        if act is None:
            r.release()
        elif act != "released":
            tick = running.pop(r.name)
            if act == "kept":
                self.kept[r.name] = (r, tick)

    def resume(self, name: str, t: datetime) -> None:
        """Let a kept replica go on at t, and the ticks that waited on its locks, to the end
        of their ticks (their events are logged at t: that is when they end)."""
        r, tick = self.kept.pop(name)
        r.resume()
        going = {name: (r, tick), **self.waiting}
        self.waiting = {}
        self.log = {n: [] for n in going}
        self.began = {n: k.t for n, (_, k) in going.items()}
        self.resumed_at = stamp()
        r.release()
        self._finish({p: replace(k, t=t) for p, k in going.values()})
        self.began = {}
        for entries in self.log.values():
            self.events.extend(entries)

    def _until_held(self, r: Replica, tick: Start) -> str:
        """Run r until it holds before its transaction ends, blocks on a lock, or finishes."""
        deadline = time.monotonic() + BARRIER_TIMEOUT_S
        while time.monotonic() < deadline:
            if wait([r.conn], timeout=0.01):
                msg = r.recv(0)
                if isinstance(msg, Held):
                    self.history.from_process(r.name, tick.t, msg.ops)
                    return "held"
                self.record(r, tick, msg)
                return "done"
            if waits.waiting(self.conn, self.dbname, r.app_name):
                event, holders = waits.blocking(self.conn, self.dbname, [r.app_name]).get(
                    r.app_name, ("", []))
                self.history.add(r.name, Type.INFO, F.BLOCK, tick.t,
                                 {"on": holders, "what": event} if holders else None)
                self.log[r.name].append(Event(tick.t, r.name, "blocked",
                                              waits.words(event, holders)))
                return "blocked"
        self.log[r.name].append(Event(tick.t, r.name, "barrier",
                                 f"neither ended nor blocked in {BARRIER_TIMEOUT_S:.0f}s; let go"))
        return "timeout"

    def _finish(self, running: dict[Replica, Start]) -> None:
        """Let every released replica run to the end of its tick, in whatever order the
        database lets them; one that holds again (its next transaction) is let go at once."""
        by_conn = {r.conn: r for r in running}
        deadline = time.monotonic() + TICK_TIMEOUT_S
        while by_conn:
            ready = wait(list(by_conn), timeout=max(0.0, min(STUCK_CHECK_S,
                                                              deadline - time.monotonic())))
            if not ready and time.monotonic() < deadline:
                self._stuck_behind_a_finished_tick(list(by_conn.values()))
                continue
            if not ready:
                names = ", ".join(sorted(r.name for r in by_conn.values()))
                raise UserError(f"replica {names} did not finish its tick in "
                                f"{TICK_TIMEOUT_S:.0f} s: the stage's code neither returned nor "
                                "raised (an endless loop, or a wait that never ends)")
            for conn in ready:
                r = by_conn[conn]
                msg = r.recv(0)
                if isinstance(msg, Held):
                    self.history.from_process(r.name, running[r].t, msg.ops, self._before(r))
                    r.release()
                    continue
                self.record(r, running[r], msg)
                del by_conn[conn]

    def _stuck_behind_a_finished_tick(self, going: list[Replica]) -> None:
        """A replica still going that waits on a lock whose every holder is a lab process
        with no tick going and no transaction open (a session-level lock kept past its tick)
        would wait until the run's limit: say so now, in the stage's terms."""
        names = {r.app_name: r for r in going}
        for app_name, (event, holders) in waits.blocking(self.conn, self.dbname,
                                                         list(names)).items():
            idle = all(h not in {r.name for r in going} and h in self.s.replica_names and all(
                state == "idle" for state, _ in waits.sessions(
                    self.conn, self.dbname, self.process(h).app_name)) for h in holders)
            if holders and idle:
                who = " and ".join(holders)
                raise UserError(
                    f"replica {names[app_name].name} {waits.words(event, holders)}, but the "
                    f"tick of {who} has ended: a lock held past its transaction (a "
                    "session-level lock, pg_advisory_lock, is held until pg_advisory_unlock or "
                    "the session closes) that nobody releases, so this tick would never end")

    def _before(self, r: Replica) -> tuple[int, datetime] | None:
        """While resuming: the ops r took before it waited happened when its tick began."""
        return (self.resumed_at, self.began[r.name]) if r.name in self.began else None

    def record(self, r: Replica, tick: Start, msg: Done) -> None:
        outcome, notes, ops = msg.outcome, msg.notes, msg.ops
        f = F.TICK if tick.command is None else F.TASK
        committed = self.history.tick_ended(r.name, tick.t, f, outcome, ops, self._before(r))
        if committed and self.states and (state := STATE.of(self.world)(self.conn)) is not None:
            self.history.state(tick.t, state)  # the shared state after each commit
        entries = self.log[r.name] = tick_entries(
            r.name, tick, outcome, notes, self.log[r.name], len(self.log) == 1,
            bool(self.kept) and not self.began, self.began.get(r.name))
        entries.extend(self.after_tick.pop(r.name, []))
        for when in (datetime.fromisoformat(op[3]["at"]) for op in ops if op[2] == F.WAKEUP):
            for sc in self.schedulers:  # a library in the replica asked to be woken then
                WAKE.of(sc)(tick, when)
        armed = self.faults.armed_in(r.name)
        if armed is not None and self.history.crashed(armed.fault.kind, self.since):
            self.faults.fired(r.name)
        if tick.command is not None:
            entries[0] = Event(tick.t, r.name, "task", " ".join(tick.command), outcome)
            entries.extend(self.owner[r.name].finished(tick, outcome))
            r.stop()

