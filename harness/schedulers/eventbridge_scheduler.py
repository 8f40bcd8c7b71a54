"""The scheduler outside the replicas (stage 05), emulated on the virtual clock.

A stage whose folder has `infra/template.json` is scheduled by what that template deploys:
each fire time of each schedule in [start, end) becomes a delivery, one fresh task process
that runs the schedule's rendered job command once (harness.schedulers.eventbridge renders it). Like
EventBridge Scheduler it delivers the target call at least once, and retries only that call:
- a `duplicate-delivery` fault delivers the slot at `at` twice, at the same instant;
- a `runtask-refused` fault refuses the first RunTask call at or after `at` (throttled, no
  capacity): no task starts, and the call is made again a minute later, up to the schedule's
  retries and maximum event age (185 and 24 hours when the template sets no RetryPolicy);
- a task that started and then exited non-zero is not run again: the call succeeded, and what
  the task did afterwards is not the scheduler's to retry (production covers it with an alarm
  on the failed task and a re-run by hand, which the claim row makes safe);
- a slot whose retries run out goes to the dead-letter record (an event; the checker, which
  reads the database, reports the slot as missed).
The minute between attempts is the lab's choice (AWS backs off on its own schedule); no count
depends on it. The scheduler asks each fault's kind what it does to it (`SchedulerFault`:
`refuses`, `delivers_twice`), never its name.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

from harness.engine.model.faults import Fault, FaultKind, kind_of
from harness.engine.model.history import Event
from harness.engine.model.scenario import TZ, Scenario
from harness.engine.model.stages import Stage
from harness.errors import UserError
from harness.schedulers.eventbridge import (
    Schedule,
    dst_passes,
    fire_times,
    format_scheduled_time,
    load_schedules,
    render_command,
)
from harness.tracks.cron import schedule as cron_schedule
from harness.tracks.cron.world import JOB

TEMPLATE = Path("infra") / "template.json"
COLD_START = timedelta(seconds=20)  # from the fire time to the task's first query (15-30 s)
RETRY_AFTER = timedelta(minutes=1)  # from a refused call to the next one (the lab's choice)
DUPLICATE = "duplicate-delivery"
REFUSED = "runtask-refused"
NAME = "scheduler"


@dataclass(frozen=True)
class Delivery:
    """One task process: what the runner dispatches, like a replica's tick."""

    t: datetime  # virtual time the task runs
    replica: str  # the task process's name in the timeline: task-1, task-2, …
    now: datetime  # the slot's scheduled time, the same for every attempt of the slot
    job: str
    attempt: int
    command: tuple[str, ...]  # e.g. python -m myapp.jobs leaderboard_close --now 2026-05-30T…Z


def template_of(stage_path: Path) -> Path | None:
    """The stage's synthesised template, if a scheduler outside the replicas runs its jobs."""
    path = stage_path / TEMPLATE
    return path if path.is_file() else None


class SchedulerFault(FaultKind):
    """A fault in what the scheduler does, for stages whose jobs a scheduler starts. Its
    fields say what it does: the scheduler (and cron's search) read them, not its name."""

    needs_at = True
    refuses = False  # the first RunTask call at or after `at` is refused (throttled)
    delivers_twice = False  # the slot at `at` is delivered twice, at the same instant

    def applies_to(self, stage: Stage) -> bool:
        return template_of(stage.path) is not None

    def check_stage(self, stage: Stage, s: Scenario) -> None:
        if not self.applies_to(stage):
            raise UserError(f"scenario {s.name!r} needs a stage whose jobs a scheduler starts "
                            f"({TEMPLATE}); {stage.path.name} has none")


def refusing(s: Scenario) -> list[Fault]:
    """The scenario's faults that refuse a RunTask call, by time."""
    return sorted((f for f in s.faults if getattr(kind_of(f), "refuses", False)),
                  key=lambda f: f.at)


def delivering_twice(s: Scenario) -> list[Fault]:
    """The scenario's faults that deliver a slot twice."""
    return [f for f in s.faults if getattr(kind_of(f), "delivers_twice", False)]


class DuplicateDelivery(SchedulerFault):
    name = DUPLICATE
    summary = ("the scheduler delivers the slot at `at` twice: two task processes at once "
               "(stages whose jobs a scheduler starts)")
    delivers_twice = True


class RunTaskRefused(SchedulerFault):
    name = REFUSED
    summary = ("the scheduler's first RunTask call at or after `at` is refused (throttled): no "
               "task starts, and the call is retried under the schedule's retry policy "
               "(stages whose jobs a scheduler starts); each fault refuses one call")
    refuses = True


class EventBridge:
    """The scheduler kind: it runs the jobs of a stage that ships a template."""

    name = "EventBridge Scheduler"

    def for_stage(self, stage_path: Path, s: Scenario) -> EventBridgeScheduler | None:
        template = template_of(stage_path)
        return EventBridgeScheduler(redeployed(load_schedules(template), s), s) if template \
            else None


def redeployed(schedules: list[Schedule], s: Scenario) -> list[Schedule]:
    """The schedules as the team would deploy them for a scenario that configures the app's
    zone or weekly close (harness.tracks.cron.schedule): the payout's cron expression at the
    configured close, every schedule in the app's zone (what stack.py's TIMEZONE and JOBS would
    say); the template's own otherwise."""
    close = cron_schedule.of(s)
    if not close.configured:
        return schedules
    return [replace(sc, timezone=close.zone.key,
                    expression=close.expression if sc.name == JOB else sc.expression)
            for sc in schedules]


class EventBridgeScheduler:
    def __init__(self, schedules: list[Schedule], s: Scenario):
        self.schedules = {schedule.name: schedule for schedule in schedules}
        self._queue: list[Delivery] = []
        self._started = 0
        self._refusals = refusing(s)
        self._twice = delivering_twice(s)
        twice = {f.at for f in self._twice}
        self._passes: dict[datetime, list[Event]] = {}  # a DST change's skipped or repeated time
        for schedule in schedules:
            for at, words in dst_passes(schedule.expression, schedule.timezone, s.start, s.end):
                t = at.astimezone(TZ)
                self._passes.setdefault(t, []).append(Event(
                    t, NAME, "dst", f"{schedule.name}: {schedule.expression}: {words}"))
            for fired in fire_times(schedule.expression, schedule.timezone, s.start, s.end):
                slot = fired.astimezone(TZ)  # the lab's clock: no DST to add time across
                for _ in range(2 if slot in twice else 1):
                    self._deliver(schedule, slot, slot + COLD_START, attempt=1)

    def times(self) -> set[datetime]:
        """When deliveries are due (grows as failed tasks are retried)."""
        return {d.t for d in self._queue} | set(self._passes)

    def due(self, t: datetime) -> tuple[list[Delivery], list[Event]]:
        """The deliveries to start at t, and the scheduler's events for them: a call a
        `runtask-refused` fault refuses starts no task and is retried or dead-lettered."""
        now = [d for d in self._queue if d.t == t]
        self._queue = [d for d in self._queue if d.t != t]
        events, started = self._passes.pop(t, []), []
        for d in now:
            what = "delivers" if d.attempt == 1 else f"retries (attempt {d.attempt})"
            slot = format_scheduled_time(d.now)
            if self._refusals and self._refusals[0].at <= t:
                refused = self._refusals.pop(0)
                events.append(Event(t, "harness", "fault", f"{refused.kind}: RunTask refused "
                                    f"(throttled) for {d.job} at {slot}; no task starts"))
                events.append(self._again(d))
                continue
            started.append(d)
            events.append(Event(t, NAME, "deliver", f"{what} {d.job} for {slot}: starts "
                                f"{d.replica}"))
        if sum(1 for d in now if d.attempt == 1) > 1:
            slots = {d.now for d in now}
            doubled = next((f.kind for f in self._twice if f.at in slots), DUPLICATE)
            events.insert(0, Event(t, "harness", "fault", f"{doubled}: the scheduler "
                                   f"starts {len(now)} tasks for one slot"))
        return started, events

    def finished(self, d: Delivery, outcome: str) -> list[Event]:
        """A task ended. Its RunTask call had succeeded, so a task that failed is not run
        again: the scheduler only says so."""
        if outcome == "ok":
            return []
        return [Event(d.t, NAME, "task-failed", f"{d.replica} ended {outcome} after it "
                      f"started; RunTask succeeded, so {d.job} for "
                      f"{format_scheduled_time(d.now)} is not retried")]

    def _again(self, d: Delivery) -> Event:
        """A refused call: retried a minute later, or dead-lettered once the schedule's
        retries or maximum event age run out."""
        schedule = self.schedules[d.job]
        slot = format_scheduled_time(d.now)
        retry_at = d.t + RETRY_AFTER
        age_ok = retry_at - d.now <= timedelta(seconds=schedule.max_event_age_s)
        if d.attempt <= schedule.max_retries and age_ok:
            nxt = self._deliver(schedule, d.now, retry_at, d.attempt + 1)
            return Event(d.t, NAME, "retry", f"{d.job} for {slot} again at "
                         f"{retry_at:%H:%M:%S} as {nxt.replica} "
                         f"(attempt {nxt.attempt} of {schedule.max_attempts})")
        where = "dead-letter queue" if schedule.dlq else "nowhere: no dead-letter queue, dropped"
        return Event(d.t, NAME, "dead-letter", f"{d.job} for {slot} gave up after "
                     f"{d.attempt} attempts → {where}")

    def _deliver(self, schedule: Schedule, slot: datetime, t: datetime, attempt: int) -> Delivery:
        self._started += 1
        # each delivery its own execution id, a duplicated first attempt too, as AWS assigns one
        # per invocation of the target
        execution_id = hashlib.sha256(
            f"{schedule.name}|{slot}|{self._started}".encode()).hexdigest()
        d = Delivery(t, f"task-{self._started}", slot, schedule.name, attempt,
                     tuple(render_command(schedule, slot, attempt=attempt,
                                          execution_id=execution_id[:16])))
        self._queue.append(d)
        return d
