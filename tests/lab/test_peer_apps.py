"""The peer scheduler apps (peers/*) on their own: real library code, real PostgreSQL and Redis,
replicas as the harness starts them (harness.engine.run.replica), counted by the cron checker.

Each test builds a fresh racelab_* database with the peer's schema and the cron world, starts
two replica processes of the peer and sends them ticks one after the other, as the harness
would. The numbers are what each library does; the peers' README and docs/peers-findings.md
explain them.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from harness.engine.inside.messages import Done, Held, Tick
from harness.engine.model import registry, scenario
from harness.engine.model.faults import SeamCrash
from harness.engine.run import replica
from harness.infra import owned, services
from harness.infra.redis_server import start_redis_server
from harness.tracks.cron import checker
from harness.tracks.cron import world as fixtures
from tests.helpers import ROOT

PEERS = ROOT / "peers"
TICK_TIMEOUT_S = 60.0
FRIDAY_1800 = "2026-05-29T18:00:00-06:00"
FRIDAY_1800_5 = "2026-05-29T18:00:00.500000-06:00"  # procrastinate wakes 0.5 s past a slot
FRIDAY_1801 = "2026-05-29T18:01:00-06:00"
FRIDAY_1815 = "2026-05-29T18:15:00-06:00"


@dataclass
class Lab:
    """One peer's world: its database, the expectation, and replica processes on demand."""

    peer: Path
    admin_url: str
    url: str
    world: fixtures.Expectation
    env: dict[str, str]
    started: list[replica.Replica]

    def replica(self, name: str) -> replica.Replica:
        r = replica.Replica(name, self.peer, {**self.env, "PGAPPNAME": f"racelab:peers:{name}"},
                            registry.track("peers").seams)
        self.started.append(r)
        r.start()
        return r

    def tick(self, r: replica.Replica, now: str,
             crash: bool = False) -> tuple[str, list[tuple[str, str, dict]]]:
        """One tick of replica r at virtual time `now`, as harness.engine.inside.agent runs it;
        `crash` arms the crash-after-first-write seam for this tick."""
        armed = SeamCrash("crash-after-first-write", "INSERT",
                          registry.track("peers").seams.crash_tables) if crash else None
        r.send(Tick(now, hold=False, crash=armed))
        msg = r.recv(TICK_TIMEOUT_S)
        assert isinstance(msg, Done), msg
        return msg.outcome, msg.notes

    def overlap(self, ticks: list[tuple[replica.Replica, str]]) -> dict[str, tuple]:
        """Ticks at one instant, forced to overlap as the harness's runner does: each replica
        runs until it is about to end its first transaction (or waits on another's lock), then
        all are let go. Returns each replica's (outcome, notes)."""
        parked = []
        for r, now in ticks:
            r.send(Tick(now, hold=True))
            parked.append(r)
            deadline = time.monotonic() + TICK_TIMEOUT_S
            while not r.conn.poll(0.01) and not self._blocked(r):
                assert time.monotonic() < deadline, f"replica {r.name} neither held nor blocked"
        done: dict[str, tuple] = {}
        for r in parked:
            if r.conn.poll(0):
                msg = r.recv(0)
                if isinstance(msg, Done):
                    done[r.name] = (msg.outcome, msg.notes)
                    continue
            r.release()
        for r in parked:
            while r.name not in done:
                msg = r.recv(TICK_TIMEOUT_S)
                if isinstance(msg, Held):
                    r.release()
                else:
                    done[r.name] = (msg.outcome, msg.notes)
        return done

    def _blocked(self, r: replica.Replica) -> bool:
        with psycopg.connect(services.libpq_url(self.url)) as conn:
            return conn.execute(
                "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() "
                "AND application_name = %s AND wait_event_type = 'Lock'",
                (r.app_name,)).fetchone() is not None

    def kill_before_commit(self, r: replica.Replica, now: str) -> str:
        """Tick r at `now` and SIGKILL it when it is about to commit its first transaction (as
        the kill-mid-tick fault does); what it was about to commit rolls back."""
        r.send(Tick(now, hold=True))
        msg = r.recv(TICK_TIMEOUT_S)
        assert isinstance(msg, Held), msg
        r.kill()
        return msg.how

    def verdict(self) -> checker.PayoutVerdict:
        with psycopg.connect(services.libpq_url(self.url)) as conn:
            return checker.check(conn, self.world)

    def rows(self, sql: str) -> list[tuple]:
        with psycopg.connect(services.libpq_url(self.url)) as conn:
            return conn.execute(sql).fetchall()


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A throwaway redis-server: the peers' keys and any lock fault stay off the shared one."""
    server = start_redis_server()
    try:
        yield server.url
    finally:
        server.stop()


def _lab(pg: services.Found, peer: str, extra_ddl: list[str], env: dict[str, str]) -> Lab:
    name = f"{services.DB_PREFIX}{os.getpid()}_{secrets.token_hex(4)}"
    owned.create(pg.url, name)  # in the lab's list: `racelab clean` knows it
    url = services.app_url(pg.url, name)
    path = PEERS / peer
    with psycopg.connect(services.libpq_url(url)) as conn:
        for statement in [*replica.schema_ddl(path), *extra_ddl]:
            conn.execute(statement)
        conn.commit()
        world = fixtures.seed(conn, scenario.resolve("staggered", "cron"))
    env = {"DATABASE_URL": url, "DB_POOL_SIZE": "1", **env}
    return Lab(path, pg.url, url, world, env, [])


@pytest.fixture
def lab_factory(pg) -> Iterator:
    labs: list[Lab] = []

    def make(peer: str, extra_ddl: list[str] = (), env: dict[str, str] | None = None) -> Lab:
        lab = _lab(pg, peer, list(extra_ddl), env or {})
        labs.append(lab)
        return lab

    yield make
    for lab in labs:
        for r in lab.started:
            r.stop()
        owned.drop(pg.url, lab.url.rsplit("/", 1)[1])


def _runs(lab: Lab) -> tuple[int, int]:
    """(runs, coins paid) of the Friday slot, as the checker counts them."""
    v = lab.verdict()
    (slot,) = v.slots
    return slot.runs, v.coins_paid


def _said(notes: list[tuple[str, str, dict]], kind: str) -> list[str]:
    return [detail for k, detail, _ in notes if k == kind]


WARM_UP = "2026-05-29T17:45:00-06:00"  # the replicas run all week: they start before the slot


def _warm(lab: Lab, *names: str) -> list[replica.Replica]:
    started = [lab.replica(name) for name in names]
    for r in started:
        assert lab.tick(r, WARM_UP)[0] == "ok"
    return started


def test_apscheduler_a_replica_starting_after_the_slot_moves_it_a_week_on_unpaid(lab_factory):
    """B starts at 18:01 (a deploy) before anyone woke for 18:00: add_job(replace_existing)
    writes the job's next run from B's clock, next Friday, and the 18:00 slot is never run."""
    lab = lab_factory("01-apscheduler")
    (a,) = _warm(lab, "A")
    b = lab.replica("B")
    assert lab.tick(b, FRIDAY_1801)[0] == "ok"
    assert lab.tick(a, "2026-05-29T18:02:00-06:00")[0] == "ok"
    assert _runs(lab) == (0, 0)
    assert lab.verdict().missed == 1


def test_procrastinate_ticks_that_are_not_its_own_wakeups_miss_the_slot(lab_factory):
    """Ticks only on the replicas' 15-minute loop never defer the Friday job: at 18:00:00 the
    deferrer is asleep until the wakeup it asked for, 18:00:00.5 (croniter leaves the present
    instant out, so its own loop oversleeps by 0.5 s), and at 18:15 the slot is past max_delay
    (10 min)."""
    lab = lab_factory("02-procrastinate")
    a, b = _warm(lab, "A", "B")
    for at in (FRIDAY_1800, FRIDAY_1815):
        assert lab.tick(a, at)[0] == "ok"
        assert lab.tick(b, at)[0] == "ok"
    assert _runs(lab) == (0, 0)
    assert lab.rows("SELECT count(*) FROM procrastinate_periodic_defers") == [(0,)]


def test_procrastinate_a_worker_killed_mid_job_leaves_the_slot_claimed_and_unpaid(lab_factory):
    """A defers and fetches the job, then dies before its payout commits: the defer row and the
    job marked 'doing' stay, so B neither defers nor fetches it (a claim without the work)."""
    lab = lab_factory("02-procrastinate")
    a, b = _warm(lab, "A", "B")
    assert lab.kill_before_commit(a, FRIDAY_1800_5) == "commit"
    assert lab.tick(b, FRIDAY_1801)[0] == "ok"
    assert lab.tick(lab.replica("A2"), "2026-05-29T18:02:00-06:00")[0] == "ok"
    assert _runs(lab) == (0, 0)
    assert lab.rows("SELECT count(*) FROM procrastinate_periodic_defers") == [(1,)]
    assert lab.rows("SELECT status::text FROM procrastinate_jobs") == [("doing",)]


def test_rq_scheduler_lock_lost_to_its_ttl_is_taken_twice_and_deleted_under_its_new_owner(
        redis_url):
    """rq-scheduler's own lock calls: a pass that outlives the TTL (here the TTL moved to its
    end, as a pause longer than it would) lets a second pass take the lock, and the first one's
    plain DEL then frees it under the second, so a third gets in too."""
    import redis
    from rq_scheduler import Scheduler

    conn = redis.Redis.from_url(redis_url)
    a, b, c = (Scheduler(connection=conn, interval=60) for _ in range(3))
    took = [bool(a.acquire_lock()), bool(b.acquire_lock())]
    ttl_ms = conn.pttl(Scheduler.scheduler_lock_key)
    assert conn.pexpire(Scheduler.scheduler_lock_key, 0)  # virtual time passed the lock's 70 s
    took.append(bool(b.acquire_lock()))
    a.remove_lock()  # A resumes and ends its pass
    took.append(bool(c.acquire_lock()))
    conn.close()
    assert took == [True, False, True, True]
    assert 60_000 < ttl_ms <= 70_000


def test_celery_beat_replicas_ticked_one_after_another_each_send_the_slot(lab_factory,
                                                                          redis_url, tmp_path):
    """Not the runner's forced overlap: three replicas' beats woken at 18:00 one after another,
    each tick run to its end before the next starts (no hold), still send the slot three times,
    and the workers pay it three times: each beat decides from its own schedule file."""
    lab = lab_factory("04-celery-beat", env={"REDIS_URL": redis_url, "BEAT_DIR": str(tmp_path)})
    started = _warm(lab, "A", "B", "C")
    for r in started:
        outcome, notes = lab.tick(r, FRIDAY_1800)
        assert outcome == "ok"
        assert _said(notes, "log") == [
            "info: Scheduler: Sending due task leaderboard_close (myapp.tasks.leaderboard_close)"]
    assert _runs(lab) == (3, 90)


def test_apscheduler_replicas_ticked_one_after_another_pay_the_slot_once(lab_factory):
    """APScheduler's 3 is the runner's forced overlap, not the library alone: the same three
    replicas woken at 18:00 one after another (no hold) pay once, because A's pass moves
    next_run_time a week on before B and C read the job store."""
    lab = lab_factory("01-apscheduler")
    started = _warm(lab, "A", "B", "C")
    ran = []
    for r in started:
        outcome, notes = lab.tick(r, FRIDAY_1800)
        assert outcome == "ok"
        ran.append(any(d.startswith('info: Running job "leaderboard_close')
                       for d in _said(notes, "log")))
    assert ran == [True, False, False]
    assert _runs(lab) == (1, 30)


def test_apscheduler_a_replica_booted_at_the_fire_time_pays_the_slot(lab_factory):
    """Booted at 18:00:00 exactly, APScheduler's CronTrigger gives 18:00:00 as the next fire
    time (it includes the present), so the replica runs the slot at once and pays it."""
    lab = lab_factory("01-apscheduler")
    a = lab.replica("A")
    assert lab.tick(a, FRIDAY_1800)[0] == "ok"
    assert _runs(lab) == (1, 30)
