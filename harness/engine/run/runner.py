"""One run: an empty database, the replicas, the ticks in virtual-time order, the verdict.

Same-instant ticks are dispatched one replica at a time, each running until it is about to
end its transaction (held there), blocked on another's lock, or done; then all are released.
Every replica's transaction is open while the next one checks: the race is forced, not hoped
for, and the seed fixes who goes first.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from string import ascii_uppercase
from typing import Protocol

import psycopg

from harness.engine.model import axes, registry
from harness.engine.model.control import RunServer
from harness.engine.model.faults import FaultKind, kind_of, start_server
from harness.engine.model.result import RunResult
from harness.engine.model.scenario import Scenario
from harness.engine.model.stages import Stage
from harness.engine.model.world import WORLD, World
from harness.engine.run import zygote
from harness.engine.run.fleet import POOL_PER_REPLICA, Fleet
from harness.engine.run.interleave import HOLD_BEFORE_COMMIT, Interleaver
from harness.engine.run.replica import Forks, schema_ddl
from harness.errors import UserError
from harness.infra import rundb, services

HARNESS_CONNECTIONS = 2  # the run's own connection, and a replaced replica's overlap
IN_ORDER_TRIES = 5  # runs of a cell or picture at most, while its waiters go on out of order


def new_run_id() -> str:
    """Unique per run; the pid lets `racelab clean` tell a live run's database from a stale one."""
    return f"{os.getpid()}_{secrets.token_hex(3)}"


_DDL: dict[str, list[str]] = {}


class Place(Protocol):
    """A run's database, kept across runs (harness.engine.explore.rig): an emptied database's name
    and URL, the harness's connection to it, and where the replicas come from."""

    dbname: str
    url: str

    def fresh(self) -> psycopg.Connection:
        """The connection, the database emptied, in a transaction."""
        ...

    def zygote(self, name: str, env: dict[str, str]) -> Forks | None:
        ...

    def world(self, open_world: Callable[[psycopg.Connection, Scenario, str], World],
              conn: psycopg.Connection, scenario: Scenario, run_id: str) -> World:
        """The run's world: the last run's, started over where it can be, else `open_world`'s.
        The place closes it."""
        ...

    def lost(self) -> None:
        """The run failed midway: the database's state is unknown."""
        ...


def ddl_of(stage: Stage) -> list[str]:
    """The stage's CREATE statements (computed once per process and stage): its track's, where
    the track says them (a project's), else its models'."""
    if (done := _DDL.get(str(stage.path))) is not None:
        return done
    said = registry.track(stage.track).ddl
    return _DDL.setdefault(str(stage.path), said(stage) if said else schema_ddl(stage.path))


def run(stage: Stage, scenario: Scenario, keep: bool = False, on_instant=None,
        interleaver: Interleaver = HOLD_BEFORE_COMMIT, place: Place | None = None,
        settings: axes.Settings = (), states: bool = True) -> RunResult:
    """`on_instant(starts done, virtual time)` is called after each instant (live progress);
    the `interleaver` plays each instant's starts (the default holds each before its COMMIT;
    harness.engine.explore.steps's Stepper moves them a statement at a time); with a `place`
    the run takes its database and replicas from there (an exploration's); `settings` are the
    run axes' values it is made with (harness.engine.model.axes); `states`: the shared state is
    read after each commit (History.states), for a view that shows it (a picture, a page, the
    JSON); a matrix cell or a table has none, and leaves that query out."""
    started = time.perf_counter()
    settings = axes.complete(settings)  # an axis with a default has its value in every run
    for f in scenario.faults:
        kind_of(f).check_stage(stage, scenario)
        if interleaver.every_statement and kind_of(f).interrupts(f):
            raise UserError(f"step mode plays no fault that acts on a held transaction; "
                            f"scenario {scenario.name!r} has {kind_of(f).describe(f)}")
    track = registry.track(stage.track)
    if interleaver.every_statement and scenario.replicas > len(ascii_uppercase):
        raise UserError(f"step mode names each replica by one letter, A to Z: at most "
                        f"{len(ascii_uppercase)} replicas, not {scenario.replicas} (a schedule "
                        "of more would not read back)")
    if interleaver.every_statement and not track.steppable:
        can = " and ".join(t.name for t in registry.tracks().values() if t.steppable)
        raise UserError(f"step mode holds before SQL statements, and before Redis commands "
                        f"where a track's hooks wrap them; the {track.name} track's stages also "
                        "share Redis, unwrapped: its schedules would not be all of them (step "
                        f"and explore play the {can} tracks)")
    if missing := track.missing():
        raise UserError(missing)
    run_id = new_run_id()
    own = any(type(kind_of(f)).start_server is not FaultKind.start_server
              for f in scenario.faults)  # checked before anything is started
    if own and keep:
        raise UserError(f"--keep keeps the run's database, and scenario {scenario.name!r} runs "
                        "on a PostgreSQL server of its own, removed when the run ends")
    if own and place is not None:
        raise UserError(f"scenario {scenario.name!r} runs on a PostgreSQL server of its own "
                        "(a primary and its standby); step and explore take their database "
                        "from the shared server: use racelab run")
    if (server := start_server(scenario)) is not None:
        return _run_on_own(stage, scenario, server, run_id, on_instant, interleaver, settings,
                           started, states)
    if place is not None:
        try:
            fleet, verdict = _play(stage, scenario, place.url, place.fresh(), run_id,
                                   on_instant, interleaver, settings, place, states=states)
        except BaseException:
            place.lost()
            raise
        return RunResult(stage, scenario, verdict, fleet.events, time.perf_counter() - started,
                         place.dbname, False, tuple(fleet.never_applied()), fleet.history,
                         settings=settings)
    pg = services.postgres()
    if keep and pg.started_here:
        raise UserError(f"--keep keeps the run's database, and this command's PostgreSQL is one "
                        f"it started ({pg.how}), stopped with its data when the command exits: "
                        f"to keep one, set {services.PG_ENV} to a server that outlives it")
    check_connections(pg.url, scenario.replicas, track.connections_per_replica)
    dbname = rundb.acquire(pg.url, ddl_of(stage), keep=keep)
    lease = None
    ended = False
    try:
        if track.forks_kept and not keep:
            lease = zygote.KEPT.lease(stage.path, track.seams, scenario.replicas)
        url = services.app_url(pg.url, dbname)
        with psycopg.connect(services.libpq_url(url), autocommit=False) as conn:
            fleet, verdict = _play(stage, scenario, url, conn, run_id, on_instant, interleaver,
                                   settings, states=states, forks=lease)
        ended = True
    finally:
        if lease is not None:
            lease.end(failed=not ended)
        if keep and ended:  # a run that failed is not kept: nobody was told its name
            pass
        elif ended:
            rundb.release(pg.url, dbname)
        else:
            rundb.discard(pg.url, dbname)
    return RunResult(stage, scenario, verdict, fleet.events, time.perf_counter() - started,
                     dbname, keep, tuple(fleet.never_applied()), fleet.history,
                     settings=settings)


OWN_DATABASE = "racelab_run"  # the one database of a run on a server of its own


def _run_on_own(stage: Stage, scenario: Scenario, server: RunServer, run_id: str, on_instant,
                interleaver: Interleaver, settings: axes.Settings, started: float,
                states: bool = True) -> RunResult:
    """A run on the server a fault started for it: one database, the server gone after."""
    try:
        services.create_database(server.url, OWN_DATABASE)
        url = services.app_url(server.url, OWN_DATABASE)
        with psycopg.connect(services.libpq_url(url), autocommit=False) as conn:
            rundb.create_schema(conn, ddl_of(stage))
            fleet, verdict = _play(stage, scenario, url, conn, run_id, on_instant, interleaver,
                                   settings, server=server, states=states)
    finally:
        server.close()
    return RunResult(stage, scenario, verdict, fleet.events, time.perf_counter() - started,
                     OWN_DATABASE, False, tuple(fleet.never_applied()), fleet.history,
                     settings=settings)


def _play(stage: Stage, scenario: Scenario, url: str, conn: psycopg.Connection, run_id: str,
          on_instant, interleaver: Interleaver, settings: axes.Settings = (),
          place: Place | None = None, server: RunServer | None = None, states: bool = True,
          forks: zygote.Lease | None = None) -> tuple[Fleet, object]:
    """The world seeded on `conn` (in a transaction), the scenario played, the verdict. A
    place's world is the place's to close; the replicas come from the place's zygotes, else
    from `forks` where it has one (zygote.Kept), else from the forkserver."""
    track = registry.track(stage.track)
    world = (place.world(track.open_world, conn, scenario, run_id) if place is not None
             else track.open_world(conn, scenario, run_id))
    try:
        WORLD.check(world, f"track {track.name!r}")
        conn.autocommit = True
        fleet = Fleet(stage, scenario, url, run_id, conn, world, track.seams, place or forks,
                      interleaver, axes.env(settings), server, states)
        fleet.on_instant = _watching(fleet, on_instant)
        try:
            fleet.play()
            return fleet, world.check(fleet.conn)  # a failover may have given it a new one
        finally:
            fleet.close()
    finally:
        if place is None:
            world.close()


def run_in_order(stage: Stage, scenario: Scenario, tries: int = IN_ORDER_TRIES,
                 settings: axes.Settings = (), states: bool = True) -> RunResult:
    """A run in which the replicas that waited on a lock went on in the order they began to
    wait, for a matrix cell or a README picture. Which of two waiters on one row goes on first
    is PostgreSQL's pick, not the lab's (the `raced` mark names the cells whose count the other
    order changes), so a run it went otherwise is repeated, up to `tries` runs in all; the last
    one stands whatever it shows."""
    for _ in range(tries - 1):
        result = run(stage, scenario, settings=settings, states=states)
        began, went = result.history.woken_order()
        if began == went:
            return result
    return run(stage, scenario, settings=settings, states=states)


def _watching(fleet: Fleet, on_instant, every_s: float = 1.0):
    """`on_instant`, and at most once a second a query on the harness's own connection, so a
    PostgreSQL gone mid-run stops the run (OperationalError) instead of ticking on."""
    last = [time.monotonic()]

    def after(done, t) -> None:
        if time.monotonic() - last[0] >= every_s:
            fleet.conn.execute("SELECT 1")
            last[0] = time.monotonic()
        if on_instant:
            on_instant(done, t)

    return after


def check_connections(admin_url: str, replicas: int, per_replica: int = POOL_PER_REPLICA
                      ) -> None:
    """Stop before creating or starting anything when the server cannot take the replicas."""
    limit, used = services.max_connections(admin_url)
    need = replicas * per_replica + HARNESS_CONNECTIONS
    if need > limit - used:
        raise UserError(
            f"PostgreSQL max_connections is {limit} and {used} are in use, so {limit - used} "
            f"are free; {replicas} replicas × {per_replica} pooled connection + "
            f"{HARNESS_CONNECTIONS} for the harness need {need}: lower --replicas or raise "
            "max_connections")
