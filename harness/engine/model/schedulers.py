"""Who starts a stage's jobs, on the virtual clock: a scheduler hands the runner, instant by
instant, the starts that are due. A start is a tick of a long-lived replica, or (with a
`command`) one fresh task process that runs that command once.

"The replicas' own loop" (each replica ticks every `interval` from its boot, and where a library
in it asks to be woken) is one scheduler; one outside the replicas (stage 05's emulated
EventBridge Scheduler) is another. A kind registers with harness.engine.model.registry.add_scheduler
and decides per stage whether it runs.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Protocol

from harness.engine.model import registry
from harness.engine.model.clock import Tick, instants, tick_plan
from harness.engine.model.faults import restart_times
from harness.engine.model.history import Event
from harness.engine.model.registry import Hook, Spec
from harness.engine.model.scenario import Scenario


class Start(Protocol):
    t: datetime  # virtual time it runs
    replica: str  # the process it runs in (a replica's letter, or a task's own name)
    now: datetime  # what the job is told the time is

    @property
    def command(self) -> tuple[str, ...] | None: ...  # None: a tick of a long-lived replica


class Scheduler(Protocol):
    def times(self) -> set[datetime]:
        """When starts are due (may grow as the run goes, e.g. retries)."""
        ...

    def due(self, t: datetime) -> tuple[list[Start], list[Event]]:
        """The starts to run at t, in dispatch order, and the scheduler's events for them."""
        ...

    def finished(self, start: Start, outcome: str) -> list[Event]:
        """A start ended with outcome ok, failed or unknown; what the scheduler does next."""
        ...


# a start that queued on the job's lock says so in its tick's first line (a clock Tick's)
WAITED = Hook("waited", None, lambda start: None)
# a library in a replica asked to be woken at `when` (a wakeup op of the start's tick)
WAKE = Hook("wake", ("start", "when"), lambda scheduler: lambda start, when: None)
# the times that came since the last call (the first call: all of them); the run asks after each
# instant, so a scheduler with thousands of starts gives the few new ones, not its `times()`
ADDED = Hook("added", (), lambda scheduler: scheduler.times)
SCHEDULER = Spec("scheduler", ("times", "due", "finished"), (WAKE, ADDED))
SCHEDULER_KIND = Spec("scheduler kind", ("name", "for_stage"))


class SchedulerKind(Protocol):
    name: str

    def for_stage(self, stage_path: Path, s: Scenario) -> Scheduler | None:
        """This kind's scheduler for a run of the stage, or None where it does not start jobs."""
        ...


class ReplicaLoop:
    """Each replica ticks every `interval` from its boot; a deploy restarts its phase. Inside
    one instant the seed fixes the dispatch order."""

    def __init__(self, s: Scenario):
        self._ticks = dict(instants(tick_plan(s, restart_times(s)), s.seed))
        self._woken: set[tuple[datetime, str]] = set()
        self._end = s.end
        self._added = list(self._ticks)  # since the last `added()`

    def wake(self, tick: Start, when: datetime) -> None:
        """The replica's code asked to be woken at `when` on its own clock (a scheduler
        library's next wakeup): it ticks then too, unless it already does."""
        t = when - (tick.now - tick.t)
        if not tick.t < t < self._end:
            return
        if t not in self._ticks:
            self._added.append(t)
        there = self._ticks.setdefault(t, [])
        if all(k.replica != tick.replica for k in there):
            there.append(Tick(t, tick.replica, when))
            self._woken.add((t, tick.replica))

    def times(self) -> set[datetime]:
        return set(self._ticks)

    def added(self) -> list[datetime]:
        added, self._added = self._added, []
        return added

    def due(self, t: datetime) -> tuple[list[Tick], list[Event]]:
        """The planned ticks in the seed's order, then the woken ones by replica name: the
        order their wakeups arrived in is the order the replicas' last ticks happened to end
        in (racing, when they ended together), which must not decide the next instant's."""
        ticks = self._ticks.pop(t, [])
        woken = sorted((k for k in ticks if (t, k.replica) in self._woken),
                       key=lambda k: k.replica)
        return [k for k in ticks if (t, k.replica) not in self._woken] + woken, []

    def finished(self, start: Start, outcome: str) -> list[Event]:
        return []


class OwnLoop:
    name = "replicas' own loop"

    def for_stage(self, stage_path: Path, s: Scenario) -> Scheduler:
        return ReplicaLoop(s)


def for_run(stage_path: Path, s: Scenario) -> list[Scheduler]:
    """Every scheduler that starts jobs in a run of this stage, in registration order (each
    kind and each scheduler checked against its declaration, once per class)."""
    found = []
    for kind in registry.schedulers():
        SCHEDULER_KIND.check(kind, f"scheduler kind {getattr(kind, 'name', kind)!r}")
        if (schedule := kind.for_stage(stage_path, s)) is not None:
            SCHEDULER.check(schedule, f"scheduler kind {kind.name!r}")
            found.append(schedule)
    return found
