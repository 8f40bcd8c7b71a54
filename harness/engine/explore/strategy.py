"""How an exploration picks its schedules, and the driver that runs them.

A strategy is the search's half of shuttle's `Scheduler` trait: `new_execution` hands the driver
the chooser of the next schedule to run, and the chooser is the other half, `next_task`
(harness.engine.explore.steps.Chooser: who moves next, given what can). A strategy kind is
registered like a track (registry.add_strategy): its name is `racelab explore --strategy NAME`,
it declares its own options, and `new(args)` makes one exploration's strategy, whose `to_json`
gives the keys it adds to the exploration's JSON (`outcomes.Exploration`). The lab's own: the
bounded depth-first search (`dfs`, the default), random walks (`walks`) and probabilistic
concurrency testing (`pct`).

The driver runs one schedule per worker thread at a time (one per core, as a matrix's cells),
each on its worker's rig (harness.engine.explore.rig), and records every schedule a strategy
handed out: its outcome, the schedule, whether it was the first bad one. It calls the
strategy's methods one at a time, under its own lock, so a strategy keeps no lock of its own.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from harness.engine.explore.outcomes import Exploration, Outcome, fingerprint, outcome_of
from harness.engine.explore.rig import Rig
from harness.engine.explore.steps import (
    Chooser,
    Diverged,
    Step,
    Stepper,
    Stuck,
    format_schedule,
    preemptions,
)
from harness.engine.model import axes
from harness.engine.model.registry import Hook, Spec
from harness.engine.model.scenario import Scenario, to_toml
from harness.engine.model.stages import Stage
from harness.engine.run import cells, fleet, replica, runner
from harness.errors import UserError
from harness.infra import services


@dataclass
class Ran:
    """One schedule that ran: its steps and its outcome."""

    steps: list[Step]
    label: str
    bad: bool
    failed: bool = False  # a tick raised or hung (harness.engine.explore.outcomes.Outcome)
    reached: bool = True  # False: a race between waiters never went the schedule's way
    reruns: int = 0  # runs repeated because a race between waiters went another way


# Runs of one schedule at most, while a race between waiters goes otherwise than it asks. The
# Stepper tips PostgreSQL's pick (steps._Instant.tip); the waiter second in a row's queue still
# goes first only about one run in six here (00 with 3 replicas, an idle machine: 3 and 4 in
# 20), so that all 60 runs miss it about once in 50,000.
RACE_TRIES = 60


class Ahead(Protocol):
    """What a strategy's `plan` may do before the search: read the stage explored, run
    schedules that are not yet its own (each a chooser; their runs, in the same order), and
    record one as explored."""

    stage: Stage

    def run(self, choosers: list[Chooser]) -> list[Ran]: ...

    def record(self, ran: Ran) -> None: ...


class Strategy(Protocol):
    """One exploration's choice of schedules (and, optionally, PLAN below)."""

    def new_execution(self) -> Chooser | None:
        """The chooser of the next schedule to run, or None when there is none now (one that
        is running may still add more: the driver asks again once it has ended)."""
        ...

    def executed(self, chooser: Chooser, ran: Ran) -> None:
        """The schedule of `chooser` ran (the driver has recorded it)."""
        ...

    def to_json(self) -> dict:
        """The keys this strategy adds to the exploration's JSON (its bound, its share, …)."""
        ...


# before the search, on the main thread while the workers wait for schedules: run schedules
# that are not yet the strategy's own, record some of them (dfs cuts its shares this way)
PLAN = Hook("plan", ("ahead",), lambda strategy: lambda ahead: None)
# before anything runs: why it will not explore this scenario (a tree that would never end), in
# one line with its estimate; "" when it will
REFUSES = Hook("refuses", ("scenario",), lambda strategy: lambda scenario: "")
STRATEGY = Spec("strategy", ("new_execution", "executed", "to_json"), (PLAN, REFUSES))


class StrategyKind(Protocol):
    name: str  # `racelab explore --strategy NAME`
    help: str

    def add_options(self, parser) -> None:
        """Its own options of `racelab explore` (argparse)."""
        ...

    def new(self, args) -> Strategy:
        """One exploration's strategy, from explore's parsed options."""
        ...

    def heading(self, data: dict) -> str:
        """Its bound in a few words for the printed heading, from the exploration's JSON."""
        ...

    def scope(self, data: dict) -> str:
        """Which schedules it explored, finishing 'no schedule … duplicates or misses'."""
        ...


class Stopped(Exception):
    """The exploration was stopped (Ctrl-C, an error) while a strategy's plan waited on runs."""


def explore(stage: Stage, s: Scenario, strategy: Strategy, name: str,
            on_schedule: Callable[[Exploration], None] | None = None,
            workers: int | None = None, settings: axes.Settings = ()) -> Exploration:
    """The schedules `strategy` picks, `workers` runs at a time (default: cells.jobs(), one per
    core; each worker has its own database and replicas, as a matrix's cells do), each run with
    the run axes' `settings`; Ctrl-C ends it with what it explored so far (`complete` False)."""
    STRATEGY.check(strategy, f"strategy {name!r}")
    if why := REFUSES.of(strategy)(s):
        raise UserError(why)
    settings = axes.complete(settings)
    found = Exploration(stage.name, s.name, s.replicas, name, settings=dict(settings),
                        fingerprint=fingerprint(stage.path, to_toml(s)))
    services.postgres()  # found once, before the threads ask
    replica.prepare()
    driver = _Driver(stage, s, strategy, found, on_schedule, settings)
    threads = [threading.Thread(target=driver.work, daemon=True)
               for _ in range(workers or cells.jobs())]
    driver.started = time.perf_counter()
    with fleet.stopping_together():
        try:
            for t in threads:
                t.start()
            driver.plan()
            for t in threads:
                while t.is_alive():
                    t.join(0.1)
        except BaseException as e:  # Ctrl-C, or an error of the plan's: the workers stop first
            fleet.STOP.set()  # every run going on stops at its next instant and cleans up
            driver.interrupt()
            for t in threads:
                if t.is_alive():  # one whose start the interrupt cut short is not
                    t.join()
            if not isinstance(e, KeyboardInterrupt):
                raise
    found.seconds = time.perf_counter() - driver.started
    found.explored.sort()
    found.strategy = strategy.to_json()
    if driver.error is not None:
        raise driver.error
    found.complete = not driver.stopped
    return found


class _Driver:
    """The runs still to make, shared by the worker threads: a plan's runs first, then the
    strategy's schedules, each recorded as explored once it ran."""

    def __init__(self, stage, s, strategy: Strategy, found: Exploration, on_schedule,
                 settings: axes.Settings = ()):
        self.stage, self.s, self.strategy, self.settings = stage, s, strategy, settings
        self.found, self.on_schedule = found, on_schedule
        self.ahead: list[tuple[Chooser, int]] = []  # a plan's runs still to start, by index
        self.ahead_ran: dict[int, Ran] = {}
        self.asked = 0
        self.busy = 0
        self.planned = False  # the plan is over: the strategy alone hands out schedules
        self.stopped = False
        self.error: BaseException | None = None
        self.started = 0.0
        self.cond = threading.Condition()

    # -- the plan, on the main thread ---------------------------------------------------------

    def plan(self) -> None:
        try:
            PLAN.of(self.strategy)(self)
            self._drained()
        except Stopped:
            pass
        finally:
            with self.cond:
                self.planned = True
                self.cond.notify_all()

    def run(self, choosers: list[Chooser]) -> list[Ran]:
        """Ahead's: run these, wait for all of them (not recorded as explored)."""
        with self.cond:
            first = self.asked
            self.asked += len(choosers)
            self.ahead += [(c, first + i) for i, c in enumerate(choosers)]
            self.cond.notify_all()
        self._drained()
        with self.cond:
            return [self.ahead_ran.pop(first + i) for i in range(len(choosers))]

    def record(self, ran: Ran) -> None:
        """Ahead's: `ran` is explored (a plan's run that turned out to be the strategy's own)."""
        with self.cond:
            self._record(ran)

    def _drained(self) -> None:
        """Wait until every run asked for has ended (raise Stopped if the search was stopped)."""
        with self.cond:
            while (self.ahead or self.busy) and not self.stopped:
                self.cond.wait(0.1)  # a timeout, so Ctrl-C reaches the main thread
            if self.stopped:
                raise Stopped

    def interrupt(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()

    # -- the workers ----------------------------------------------------------------------------

    def work(self) -> None:
        rig = None
        try:
            try:  # made before the first run, so every worker is ready when the search branches
                rig = Rig(self.stage, self.s)
            except BaseException as e:  # noqa: BLE001 - handed to the main thread
                self._failed(e)
            while (job := self._take()) is not None:
                chooser, index = job
                ran = None
                try:
                    ran = self._run(chooser, rig)
                except BaseException as e:  # noqa: BLE001 - handed to the main thread
                    self._failed(e)
                with self.cond:
                    self.busy -= 1
                    if ran is not None and not self.stopped:
                        if index is not None:
                            self.ahead_ran[index] = ran
                        else:
                            try:
                                self.strategy.executed(chooser, ran)
                                self._record(ran)
                            except Exception as e:  # noqa: BLE001 - handed to the main thread
                                self._failed(e)
                    self.cond.notify_all()
        finally:
            if rig is not None:
                rig.close()

    def _failed(self, e: BaseException) -> None:
        if isinstance(e, KeyboardInterrupt):
            self.interrupt()
            return
        with self.cond:
            self.error = self.error or e
            self.stopped = True
            self.cond.notify_all()
        fleet.STOP.set()

    def _take(self) -> tuple[Chooser, int | None] | None:
        """The next run: a plan's first, then the strategy's; None once the plan is over and
        the strategy has nothing left with no run going on that could give it more."""
        with self.cond:
            while True:
                if self.stopped:
                    self.cond.notify_all()
                    return None
                if self.ahead:
                    self.busy += 1
                    return self.ahead.pop()
                if (chooser := self.strategy.new_execution()) is not None:
                    self.busy += 1
                    return chooser, None
                if self.planned and not self.busy:
                    self.cond.notify_all()
                    return None
                self.cond.wait()

    def _run(self, chooser: Chooser, rig: Rig) -> Ran:
        """One schedule: run again while a race between waiters goes otherwise than `chooser`
        asks (PostgreSQL's pick: `steps.RACY_WAITS`), up to RACE_TRIES runs in all."""
        for tries in range(1, RACE_TRIES + 1):
            stepper = Stepper(copy.deepcopy(chooser))  # each try from the chooser's start
            try:
                result = runner.run(self.stage, self.s, interleaver=stepper, place=rig,
                                    settings=self.settings)
            except Diverged as e:
                missed = str(e)
                continue
            except Stuck as e:  # a limit this schedule met is its outcome; the search goes on
                return Ran(stepper.steps, e.outcome, False, True, reruns=tries - 1)
            return Ran(stepper.steps, *outcome_of(result), reruns=tries - 1)
        return Ran(stepper.steps, missed, False, reached=False, reruns=RACE_TRIES)

    def _record(self, ran: Ran) -> None:
        """A schedule of this exploration's, with its outcome (the caller holds the lock)."""
        found = self.found
        found.reruns += ran.reruns
        if not ran.reached:  # a branch PostgreSQL never let happen in RACE_TRIES runs
            found.unreached.append(" ".join(s.token for s in ran.steps) + f": {ran.label}")
            return
        schedule = format_schedule(ran.steps)
        found.outcomes.setdefault(ran.label, Outcome(ran.label, ran.bad, ran.failed)).add(
            schedule, preemptions(ran.steps))
        found.explored.append(schedule)
        if ran.bad and found.first_bad_at is None:
            found.first_bad_at = len(found.explored)
        found.seconds = time.perf_counter() - self.started
        if self.on_schedule:
            self.on_schedule(found)
