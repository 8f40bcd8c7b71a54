"""Every schedule of a scenario's same-instant steps, up to a bound on preemptions.

Systematic concurrency testing in the manner of CHESS (iterative context bounding): a
preemption is switching away from a process that could still move (`steps.Step.preempts`);
most races need one or two. Each schedule is one whole run on an emptied database (and a
fresh Redis, where the track has one) with fresh replica processes, so a schedule's outcome is
the checker's verdict, as for any run; each worker thread keeps its database and a zygote per
replica from one schedule to the next (harness.engine.explore.rig), so a schedule does not pay for a
database's files or a replica's imports. The search is stateless: a run that follows a
prefix and then goes on without preempting (`steps.default_choice`) reports every step's
options; each option not taken at a step past the prefix, within the bound, is the prefix of
another schedule. Every schedule is
reached once. One run per core goes on at a time (threads, as a matrix's cells), each taking
the newest prefix (depth first); the schedules explored are listed sorted.

A share (`partition=(i, n)`) explores the pieces of the tree that harness.engine.explore.split deals
to it: every share runs the same few schedules near the root to learn the tree's shape, cuts
it into pieces of about equal estimated work and deals them out the same way, so n processes
or hosts cover the tree together, none twice. The runs made to cut it that fall to another
share are counted (`shape_runs`), not reported as this share's.

The bound, as in CHESS: a preemption is a switch, within one instant, away from a process that
could have taken its next step (held before a statement, neither waiting on a lock nor
finished). A switch forced by a wait or by the end of a tick costs nothing: when B's statement
waits for A's row, A going on is no choice of the scheduler's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from harness.engine.explore import split
from harness.engine.explore.outcomes import Exploration, Outcome, outcome_of
from harness.engine.explore.rig import Rig
from harness.engine.explore.steps import Step, Stepper, View, default_choice, format_schedule
from harness.engine.model.scenario import Scenario
from harness.engine.model.stages import Stage
from harness.engine.run import cells, fleet, replica, runner
from harness.errors import UserError
from harness.infra import services


class Prefix:
    """A chooser that plays a prefix of letters (across instants), then never preempts."""

    def __init__(self, letters: list[str]):
        self.letters = list(letters)
        self.used = 0

    def choose(self, view: View) -> str:
        if self.used < len(self.letters):
            self.used += 1
            return self.letters[self.used - 1]
        return default_choice(view)


def explore(stage: Stage, s: Scenario, bound: int = 2, partition: tuple[int, int] = (1, 1),
            on_schedule: Callable[[Exploration], None] | None = None,
            workers: int | None = None) -> Exploration:
    """Explore every schedule of `s` on `stage` with at most `bound` preemptions (this share of
    them), `workers` runs at a time (default: cells.jobs(), one per core; each run has its own
    database and replicas, as a matrix's cells do); Ctrl-C ends it with what it explored so far
    (`complete` False)."""
    found = Exploration(stage.name, s.name, s.replicas, bound, partition)
    services.postgres()  # found once, before the threads ask
    replica.prepare()
    fleet.STOP.clear()
    tree = _Tree(stage, s, bound, found, on_schedule)
    threads = [threading.Thread(target=tree.work, daemon=True)
               for _ in range(workers or cells.jobs())]
    started = time.perf_counter()
    tree.started = started
    for t in threads:
        t.start()
    try:
        tree.explore(partition)
        for t in threads:
            while t.is_alive():
                t.join(0.1)
    except KeyboardInterrupt:
        fleet.STOP.set()  # every run going on stops at its next instant and cleans up
        tree.interrupt()
        for t in threads:
            t.join()
    found.seconds = time.perf_counter() - started
    found.explored.sort()
    if tree.error is not None:
        raise tree.error
    found.complete = not tree.stopped
    return found


class _Stopped(Exception):
    """The exploration was stopped (Ctrl-C, an error) while the shares' pieces were made."""


@dataclass
class _Ran:
    steps: list[Step]
    label: str
    bad: bool


class _Tree:
    """The runs still to make, shared by the worker threads. A run of a share's own subtree
    ("mine") is recorded and adds the prefixes of the schedules that branch off it; a run made
    to split the tree ("split") is kept until the split says which share it falls to."""

    def __init__(self, stage, s, bound, found, on_schedule):
        self.stage, self.s, self.bound = stage, s, bound
        self.found, self.on_schedule = found, on_schedule
        self.todo: list[tuple[list[str], str]] = []
        self.ran: dict[str, _Ran] = {}  # the split's runs, by their prefix's letters
        self.busy = 0
        self.closing = False  # no more runs will be asked for
        self.stopped = False
        self.error: BaseException | None = None
        self.started = 0.0
        self.cond = threading.Condition()

    def explore(self, partition: tuple[int, int]) -> None:
        """Every schedule of this share: the whole tree depth first, or the pieces the split
        deals to it (harness.engine.explore.split). Returns once every run asked for has ended."""
        me, shares = partition
        try:
            if shares == 1:
                self._ask([([], "mine")])
            else:
                dealt = split.deal(split.pieces(self.bound, shares, self._split_runs), shares)
                with self.cond:
                    for share, parts in enumerate(dealt, start=1):
                        for part in (p for p in parts if p.leaf):
                            ran = self.ran["".join(part.prefix)]
                            if share == me:
                                self._record(ran.steps, ran.label, ran.bad)
                            else:
                                self.found.shape_runs += 1
                self._ask([(p.prefix, "mine") for p in reversed(dealt[me - 1]) if not p.leaf])
            self._drained()
        except _Stopped:
            pass
        finally:
            with self.cond:
                self.closing = True
                self.cond.notify_all()

    def _split_runs(self, prefixes: list[list[str]]) -> list[list[Step]]:
        self._ask([(p, "split") for p in prefixes])
        self._drained()
        with self.cond:
            return [self.ran["".join(p)].steps for p in prefixes]

    def _ask(self, jobs: list[tuple[list[str], str]]) -> None:
        with self.cond:
            self.todo += jobs
            self.cond.notify_all()

    def _drained(self) -> None:
        """Wait until every run asked for has ended (raise _Stopped if the tree was stopped)."""
        with self.cond:
            while (self.todo or self.busy) and not self.stopped:
                self.cond.wait(0.1)  # a timeout, so Ctrl-C reaches the main thread
            if self.stopped:
                raise _Stopped

    def interrupt(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()

    def work(self) -> None:
        rig = None
        try:
            try:  # made before the first run, so every worker is ready when the tree branches
                rig = Rig(self.stage, self.s)
            except BaseException as e:  # noqa: BLE001 - handed to the main thread
                self._failed(e)
            while (job := self._take()) is not None:
                prefix, kind = job
                branches = None
                try:
                    branches = self._run(prefix, kind, rig)
                except BaseException as e:  # noqa: BLE001 - handed to the main thread
                    self._failed(e)
                with self.cond:
                    self.busy -= 1
                    if branches and not self.stopped:
                        self.todo += [(b, kind) for b in reversed(branches)]
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

    def _take(self) -> tuple[list[str], str] | None:
        with self.cond:
            while True:
                if self.stopped or (self.closing and not self.todo):
                    self.cond.notify_all()
                    return None
                if self.todo:
                    self.busy += 1
                    return self.todo.pop()
                self.cond.wait()

    def _run(self, prefix: list[str], kind: str, rig: Rig) -> list[list[str]]:
        """One schedule: `prefix`, then no preemption. A share's own run is recorded and gives
        its branches; a split's run is kept for the split."""
        stepper = Stepper(Prefix(prefix))
        result = runner.run(self.stage, self.s, interleaver=stepper, place=rig)
        steps = stepper.steps
        letters = [step.chosen for step in steps]
        if letters[:len(prefix)] != prefix:
            raise UserError(f"schedule {''.join(prefix)} could not be replayed: the stage did "
                            "not take the same steps twice")
        label, bad = outcome_of(result)
        with self.cond:
            if kind == "split":
                self.ran["".join(prefix)] = _Ran(steps, label, bad)
                return []
            self._record(steps, label, bad)
        return split.branches(steps, len(prefix), self.bound)

    def _record(self, steps: list[Step], label: str, bad: bool) -> None:
        """A schedule of this share's, with its outcome (the caller holds the lock)."""
        found = self.found
        found.outcomes.setdefault(label, Outcome(label, bad)).add(
            format_schedule(steps), split.preemptions(steps))
        found.explored.append(format_schedule(steps))
        if bad and found.first_bad_at is None:
            found.first_bad_at = len(found.explored)
        found.seconds = time.perf_counter() - self.started
        if self.on_schedule:
            self.on_schedule(found)
