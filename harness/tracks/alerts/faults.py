"""The alerts track's faults: each acts on what surrounds the replicas, through its world.

`needs` says what the world must set up for it: "front" (a proxy between the app and Redis)
and "pair" (a primary and a replica whose link can be cut). Without a time, a Redis fault acts
from the start of the run.
"""

from __future__ import annotations

from datetime import datetime

from harness.engine.model.control import RunControl
from harness.engine.model.faults import Fault, FaultKind, HoldAt
from harness.engine.model.history import HARNESS, Event
from harness.engine.model.scenario import format_duration
from harness.faults.pause import PAUSE, Pause
from harness.tracks.alerts import checker as ac
from harness.tracks.alerts.world import CLIENT_TIMEOUT_S, SLOW_LATENCY_S, AlertsWorld


class AlertsFault(FaultKind):
    where = "env"
    track = "alerts"
    needs: tuple[str, ...] = ("front",)

    def strike(self, f: Fault, run: RunControl, t: datetime) -> list[Event]:
        return [Event(t, HARNESS, "fault", self.act(f, run.world, run, t))]

    def act(self, f: Fault, world: AlertsWorld, run: RunControl, t: datetime) -> str:
        """Carry out the fault; what happened, for the run's event log."""
        raise NotImplementedError


class RedisDown(AlertsFault):
    name = "redis-down"
    summary = "Redis refuses every connection from `at` (the whole run if no time is given)"

    def act(self, f: Fault, world: AlertsWorld, run: RunControl, t: datetime) -> str:
        world.go_down(t)
        return "redis-down: the address the app uses for Redis refuses every connection"


class RedisSlow(AlertsFault):
    name = "redis-slow"
    summary = ("Redis answers 3 s late from `at` (the whole run if no time is given), "
               "beyond the app's 1.5 s timeout")

    def act(self, f: Fault, world: AlertsWorld, run: RunControl, t: datetime) -> str:
        world.front.set_latency(SLOW_LATENCY_S)
        world.slow_since = t
        return (f"redis-slow: Redis answers {SLOW_LATENCY_S:g} s late "
                f"(the app waits at most {CLIENT_TIMEOUT_S:g} s per attempt)")


class RedisLinkCut(AlertsFault):
    name = "redis-link-cut"
    summary = ("the Redis replica's replication link is cut at `at` (from the start if no time "
               "is given): claims written after it never reach the replica")
    needs = ("pair", "front")

    def act(self, f: Fault, world: AlertsWorld, run: RunControl, t: datetime) -> str:
        world.pair.cut_link()
        return ("redis-link-cut: the replica's replication link is cut; "
                "claims from now on stay on the primary only")


class RedisFailover(AlertsFault):
    name = "redis-failover"
    summary = "the Redis replica is promoted to primary and the app re-pointed at it"
    needs_at = True
    needs = ("pair", "front")

    def act(self, f: Fault, world: AlertsWorld, run: RunControl, t: datetime) -> str:
        return world.fail_over()


class StuckJobFlood(AlertsFault):
    name = "stuck-job-flood"
    summary = ("600 background jobs become stuck at `at` (started 15 minutes before, "
               "never finished)")
    needs_at = True
    needs = ()
    floods_jobs = True  # the checker expects an alert for each of its jobs (ac.floods)

    def act(self, f: Fault, world: AlertsWorld, run: RunControl, t: datetime) -> str:
        # its place among the scenario's floods (two alike at one instant are two floods,
        # each with jobs of its own: the first of them not flooded yet)
        index = next(i for i, g in enumerate(ac.floods(run.faults))
                     if g == f and i not in world.flooded)
        world.flooded.add(index)
        started = world.flood(index, t)
        return (f"stuck-job-flood: {ac.FLOOD_JOBS} background jobs started at "
                f"{started:%H:%M} have not finished: each one is stuck now")


class SlowPass(Pause):
    """The reconciliation pass outlasts its window: the replica stands still between its
    listing and its first write, as a pass paging through thousands of sandboxes would take
    longer than two minutes (the pause is a SIGSTOP: the process keeps what it listed)."""

    name = "slow-pass"
    track = "alerts"
    summary = (f"SIGSTOP the replica in its reconciliation pass at or after `at`, after its "
               f"listing and before its first UPDATE of workspaces; SIGCONT "
               f"{format_duration(PAUSE)} of virtual time later")
    hold_at = HoldAt(verb="UPDATE", table="workspaces")
    where_in_tick = "in its reconciliation pass, after its listing, before it writes"


KINDS = (RedisDown(), RedisSlow(), RedisLinkCut(), RedisFailover(), StuckJobFlood(), SlowPass())
