"""Every schedule of a scenario's same-instant steps, up to a bound on preemptions.

Systematic concurrency testing in the manner of CHESS (iterative context bounding): a
preemption is switching away from a process that could still move (`steps.Step.preempts`);
most races need one or two. Each schedule is one whole run on an emptied database (and a
fresh Redis, where the track has one) with fresh replica processes, so a schedule's outcome is
the checker's verdict, as for any run; each worker thread keeps its database and a zygote per
replica from one schedule to the next (harness.engine.rig), so a schedule does not pay for a
database's files or a replica's imports. The search is stateless: a run that follows a
prefix and then goes on without preempting (`steps.default_choice`) reports every step's
options; each option not taken at a step past the prefix, within the bound, is the prefix of
another schedule. Every schedule is
reached once. One run per core goes on at a time (threads, as a matrix's cells), each taking
the newest prefix (depth first); the schedules explored are listed sorted.

A share (`partition=(i, n)`) explores the schedules whose first `SHARE_DEPTH` choices fall to
it (a stable hash of those letters), so n processes or hosts cover the tree together, none
twice. To learn the shape of the tree above that depth a share may run a schedule that falls
to another; such a run is counted (`shape_runs`), not reported as its own.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.engine import cells, fleet, registry, replica, runner
from harness.engine.rig import Rig
from harness.engine.scenario import Scenario
from harness.engine.stages import Stage
from harness.engine.steps import Step, Stepper, View, default_choice, format_schedule
from harness.errors import UserError
from harness.infra import services

SHARE_DEPTH = 2


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


@dataclass
class Outcome:
    label: str  # e.g. "2 payouts"
    bad: bool  # a duplicate or a miss
    schedules: int = 0
    shortest: str = ""  # the fewest preemptions, then the fewest steps
    shortest_preemptions: int = 0

    def add(self, schedule: str, preemptions: int) -> None:
        self.schedules += 1
        key = (preemptions, len(schedule.replace(" ", "")), schedule)
        if not self.shortest or key < (self.shortest_preemptions,
                                       len(self.shortest.replace(" ", "")), self.shortest):
            self.shortest, self.shortest_preemptions = schedule, preemptions

    def to_json(self) -> dict:
        return {"outcome": self.label, "bad": self.bad, "schedules": self.schedules,
                "shortest": self.shortest, "shortest_preemptions": self.shortest_preemptions}


@dataclass
class Exploration:
    stage: str
    scenario: str
    replicas: int
    preemptions: int
    partition: tuple[int, int] = (1, 1)
    explored: list[str] = field(default_factory=list)  # each schedule this share owns, as run
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    shape_runs: int = 0
    seconds: float = 0.0
    complete: bool = False  # False: stopped (Ctrl-C) before the tree was done

    @property
    def bad(self) -> list[Outcome]:
        return [o for o in self.outcomes.values() if o.bad]

    def to_json(self) -> dict:
        return {"stage": self.stage, "scenario": self.scenario, "replicas": self.replicas,
                "preemptions": self.preemptions, "partition": list(self.partition),
                "schedules": len(self.explored), "shape_runs": self.shape_runs,
                "complete": self.complete, "seconds": round(self.seconds, 3),
                "schedules_per_s": round(len(self.explored) / self.seconds, 2)
                if self.seconds else 0.0,
                "outcomes": [o.to_json() for o in self.outcomes.values()],
                "duplicates_or_misses": bool(self.bad), "explored": self.explored}


def owner(letters: list[str], shares: int) -> int:
    """The share (1…shares) a schedule with these first choices falls to."""
    return zlib.crc32("".join(letters[:SHARE_DEPTH]).encode()) % shares + 1


def preemptions(steps: list[Step]) -> int:
    return sum(step.preempts for step in steps)


def outcome_of(result) -> tuple[str, bool]:
    v = result.verdict
    report = registry.track(result.stage.track).report
    if words := getattr(report, "outcome_words", None):  # runs of more than one kind
        label = words(v)
    else:
        word = getattr(report, "RUN_WORD", "run")
        label = f"{v.runs} {word}{'' if v.runs == 1 else 's'}"
    if v.missed:
        label += f", {v.missed} missed"
    if v.partial:
        label += f", {v.partial} partial"
    return label, bool(v.duplicates or v.missed)


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
    tree = _Tree(stage, s, bound, partition, found, on_schedule)
    threads = [threading.Thread(target=tree.work, daemon=True)
               for _ in range(workers or cells.jobs())]
    started = time.perf_counter()
    tree.started = started
    for t in threads:
        t.start()
    try:
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


class _Tree:
    """The schedules still to run (prefixes), shared by the worker threads: each takes one,
    runs it, records it, and adds the prefixes of the schedules that branch off it."""

    def __init__(self, stage, s, bound, partition, found, on_schedule):
        self.stage, self.s, self.bound = stage, s, bound
        self.me, self.shares = partition
        self.found, self.on_schedule = found, on_schedule
        self.todo: list[list[str]] = [[]]
        self.busy = 0
        self.stopped = False
        self.error: BaseException | None = None
        self.started = 0.0
        self.cond = threading.Condition()

    def interrupt(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()

    def work(self) -> None:
        rig = None
        try:
            try:  # made while the first schedule runs: ready when the tree branches
                rig = Rig(self.stage, self.s)
            except BaseException as e:  # noqa: BLE001 - handed to the main thread
                self._failed(e)
            while (prefix := self._take()) is not None:
                branches = None
                try:
                    branches = self._run(prefix, rig)
                except BaseException as e:  # noqa: BLE001 - handed to the main thread
                    self._failed(e)
                with self.cond:
                    self.busy -= 1
                    if branches and not self.stopped:
                        self.todo += reversed(branches)
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
        fleet.STOP.set()

    def _take(self) -> list[str] | None:
        with self.cond:
            while True:
                if self.stopped or (not self.todo and not self.busy):
                    self.cond.notify_all()
                    return None
                if self.todo:
                    prefix = self.todo.pop()
                    if len(prefix) >= SHARE_DEPTH and owner(prefix, self.shares) != self.me:
                        continue  # another share's subtree
                    self.busy += 1
                    return prefix
                self.cond.wait()

    def _run(self, prefix: list[str], rig: Rig) -> list[list[str]]:
        stepper = Stepper(Prefix(prefix))
        result = runner.run(self.stage, self.s, stepper=stepper, place=rig)
        steps = stepper.steps
        letters = [step.chosen for step in steps]
        if letters[:len(prefix)] != prefix:
            raise UserError(f"schedule {''.join(prefix)} could not be replayed: the stage did "
                            "not take the same steps twice")
        found = self.found
        with self.cond:
            if owner(letters, self.shares) == self.me:
                label, bad = outcome_of(result)
                found.outcomes.setdefault(label, Outcome(label, bad)).add(
                    format_schedule(steps), preemptions(steps))
                found.explored.append(format_schedule(steps))
            else:
                found.shape_runs += 1
            found.seconds = time.perf_counter() - self.started
            if self.on_schedule:
                self.on_schedule(found)
        return _branches(steps, len(prefix), self.bound)


def _branches(steps: list[Step], start: int, bound: int) -> list[list[str]]:
    """The prefixes of the schedules that differ from `steps` first at a step from `start` on,
    in letter order, within the bound."""
    out = []
    used = preemptions(steps[:start])
    for i in range(start, len(steps)):
        step = steps[i]
        for other in step.options:
            if other == step.chosen:
                continue
            extra = int(step.previous in step.options and other != step.previous)
            if used + extra <= bound:
                out.append([x.chosen for x in steps[:i]] + [other])
        used += step.preempts
    return out


def merge(parts: list[dict]) -> dict:
    """The shares' JSON as one exploration's (the parts of one stage, scenario and bound)."""
    first = parts[0]
    same = ("stage", "scenario", "replicas", "preemptions")
    for p in parts[1:]:
        if any(p[k] != first[k] for k in same):
            raise UserError("--merge: the files explore different things (" + ", ".join(
                f"{k} {first[k]!r} vs {p[k]!r}" for k in same if p[k] != first[k]) + ")")
    shares = {p["partition"][1] for p in parts}
    seen = sorted(p["partition"][0] for p in parts)
    if len(shares) != 1 or seen != list(range(1, shares.pop() + 1)):
        raise UserError(f"--merge: the files are shares {seen}, not every share of one split")
    outcomes: dict[str, Outcome] = {}
    for p in parts:
        for o in p["outcomes"]:
            into = outcomes.setdefault(o["outcome"], Outcome(o["outcome"], o["bad"]))
            count = into.schedules
            into.add(o["shortest"], o["shortest_preemptions"])
            into.schedules = count + o["schedules"]
    explored = sorted(x for p in parts for x in p["explored"])
    if len(set(explored)) != len(explored):
        raise UserError("--merge: a schedule is in two of the files: they are not the shares of "
                        "one split")
    seconds = sum(p["seconds"] for p in parts)
    return {**{k: first[k] for k in same}, "partition": [1, 1], "schedules": len(explored),
            "shape_runs": sum(p["shape_runs"] for p in parts),
            "complete": all(p["complete"] for p in parts), "seconds": round(seconds, 3),
            "schedules_per_s": round(len(explored) / seconds, 2) if seconds else 0.0,
            "outcomes": [o.to_json() for o in outcomes.values()],
            "duplicates_or_misses": any(o.bad for o in outcomes.values()),
            "explored": explored}
