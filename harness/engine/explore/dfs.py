"""The lab's exploration strategy (`racelab explore`, `--strategy dfs`, the default): every
schedule of a scenario's same-instant steps, up to a bound on preemptions.

Systematic concurrency testing in the manner of CHESS (iterative context bounding): a
preemption is switching away from a process that could still move (`steps.Step.preempts`);
most races need one or two. Each schedule is one whole run on an emptied database (and a
fresh Redis, where the track has one) with fresh replica processes, so a schedule's outcome is
the checker's verdict, as for any run; each worker thread keeps its database and a zygote per
replica from one schedule to the next (harness.engine.explore.rig), so a schedule does not pay for a
database's files or a replica's imports (harness.engine.explore.strategy runs them). The
search is stateless: a run that follows a
prefix and then goes on without preempting (`steps.default_choice`) reports every step's
options; each option not taken at a step past the prefix, within the bound, is the prefix of
another schedule, and so is each other waiter going on first after a race between waiters
(harness.engine.explore.steps.RACY_WAITS; such a prefix is run again until PostgreSQL lets it
go that way). Every schedule is reached once. One run per core goes on at a time (threads, as
a matrix's cells), each taking the newest prefix (depth first); the schedules explored are
listed sorted.

A share (`partition=(i, n)`) explores the pieces of the tree that harness.engine.explore.split deals
to it: every share runs the same few schedules near the root to learn the tree's shape, cuts
it into pieces of about equal estimated work and deals them out the same way, so n processes
or hosts cover the tree together, none twice. The runs made to cut it that fall to another
share are counted (`shape_runs`), not reported as this share's.

The bound, as in CHESS: a preemption is a switch, within one instant, away from a process that
could have taken its next step (held before a statement, neither waiting on a lock nor
finished). A switch forced by a wait or by the end of a tick costs nothing: when B's statement
waits for A's row, A going on is no choice of the search's.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import re

from harness.engine.explore import split, strategy
from harness.engine.explore.outcomes import Exploration
from harness.engine.explore.steps import Diverged, Step, View, default_choice
from harness.engine.explore.strategy import Ahead, Ran
from harness.engine.model import registry
from harness.engine.model.scenario import Scenario
from harness.engine.model.stages import Stage
from harness.errors import UserError

MAX_PREEMPTIONS = 4  # the schedules grow as replicas × steps to that power
MAX_SCHEDULES = 10_000  # a tree known to be larger would not end here: refused before it starts


def _most_replicas() -> int:
    """The most replicas whose n! stays within MAX_SCHEDULES (7)."""
    n = 1
    while math.factorial(n + 1) <= MAX_SCHEDULES:
        n += 1
    return n


def explore(stage: Stage, s: Scenario, bound: int = 2, partition: tuple[int, int] = (1, 1),
            on_schedule=None, workers: int | None = None) -> Exploration:
    """Every schedule of `s` on `stage` with at most `bound` preemptions (this share of them):
    `racelab explore STAGE` (harness.engine.explore.strategy.explore runs them)."""
    return strategy.explore(stage, s, BoundedDFS(bound, partition), DFS.name, on_schedule,
                            workers)


class Prefix:
    """A chooser that plays a prefix of steps (across instants), then never preempts. Each step
    is a `Step.token`: a letter, or after a race between waiters the one that must go on first
    (`A=C`); a run where PostgreSQL let another through is repeated (`steps.Diverged`)."""

    def __init__(self, tokens: list[str]):
        self.tokens = list(tokens)
        self.used = 0

    def choose(self, view: View) -> str:
        if 0 < self.used <= len(self.tokens) and "=" in self.tokens[self.used - 1]:
            first = self.tokens[self.used - 1].split("=", 1)[1]
            if first in view.blocked:
                raise Diverged(f"step {self.used}: {first} was to go on first of the waiters "
                               f"it woke, but waits for {' and '.join(view.blocked[first])}")
        if self.used < len(self.tokens):
            self.used += 1
            return self.tokens[self.used - 1][0]
        self.used += 1
        return self.then(view)

    def wants(self, position: int, racers: tuple[str, ...]) -> str | None:
        """The waiter the token of the step just chosen asks to go on first (`A=C`: C)."""
        token = self.tokens[self.used - 1] if 0 < self.used <= len(self.tokens) else ""
        return token.split("=", 1)[1] if "=" in token else None

    def then(self, view: View) -> str:
        """Past the prefix: the one that moved last goes on while it can."""
        return default_choice(view)


class BoundedDFS:
    """Depth first, stateless: each schedule is a prefix played, then no preemption; the
    prefixes of the schedules that branch off it within the bound are searched next."""

    def __init__(self, bound: int = 2, partition: tuple[int, int] = (1, 1)):
        self.bound, self.partition = bound, partition
        self.todo: list[list[str]] = [[]] if partition[1] == 1 else []  # the newest last
        self.shape_runs = 0
        self.cut = ""  # a share's: a digest of every share's pieces (`merge` checks they agree)

    def refuses(self, s: Scenario) -> str:
        """Above MAX_SCHEDULES even with no preemption (every order of n replicas' whole ticks,
        n!, a lower bound of the tree), it would never end: say so, with the estimate."""
        if (orders := math.factorial(s.replicas)) <= MAX_SCHEDULES:
            return ""
        return (f"explore: {s.replicas} replicas give at least {s.replicas}! = {orders:.3g} "
                f"schedules (every order of their ticks, before any preemption), more than "
                f"{MAX_SCHEDULES:,}; explore at most {_most_replicas()} replicas, or sample "
                "with --strategy random or pct")

    def plan(self, ahead: Ahead) -> None:
        """A share's pieces: every share runs the same few schedules near the root, cuts the
        tree by estimated work and deals the pieces the same way (harness.engine.explore.split)."""
        me, shares = self.partition
        if shares == 1:
            return

        def run(prefixes: list[list[str]]) -> list[list[Step] | None]:
            runs = ahead.run([Prefix(p) for p in prefixes])
            for prefix, ran in zip(prefixes, runs, strict=True):
                if ran.reached:
                    _replayed(prefix, ran.steps)
            found[len(found):] = [("".join(p), r) for p, r in zip(prefixes, runs, strict=True)]
            return [r.steps if r.reached else None for r in runs]

        found: list[tuple[str, Ran]] = []
        dealt = split.deal(split.pieces(self.bound, shares, run), shares)
        self.cut = hashlib.sha256(repr([[(p.prefix, p.leaf) for p in share] for share in dealt]
                                       ).encode()).hexdigest()[:16]
        ran = dict(found)
        for share, parts in enumerate(dealt, start=1):
            for part in (p for p in parts if p.leaf):
                if share == me:
                    ahead.record(ran["".join(part.prefix)])
                else:
                    self.shape_runs += 1
        self.todo = [p.prefix for p in reversed(dealt[me - 1]) if not p.leaf]

    def new_execution(self) -> Prefix | None:
        return Prefix(self.todo.pop()) if self.todo else None

    def executed(self, chooser: Prefix, ran: Ran) -> None:
        if ran.reached:
            _replayed(chooser.tokens, ran.steps)
            self.todo += list(reversed(split.branches(ran.steps, chooser.tokens, self.bound)))

    def to_json(self) -> dict:
        return {"preemptions": self.bound, "partition": list(self.partition),
                "shape_runs": self.shape_runs, "cut": self.cut}


def _replayed(prefix: list[str], steps: list[Step]) -> None:
    if [step.chosen for step in steps][:len(prefix)] != [token[0] for token in prefix]:
        raise UserError(f"schedule {''.join(prefix)} could not be replayed: the stage did not "
                        "take the same steps twice")


class DFS:
    """The strategy kind: `--preemptions K` and `--partition I/N`."""

    name = "dfs"
    help = "every schedule up to a bound on preemptions, depth first (the default)"

    def add_options(self, parser) -> None:
        parser.add_argument("--preemptions", type=preemptions, default=2,
                            help="switches away from a replica that could have taken its next "
                            "step; a switch forced by a wait or a tick's end is free (default 2; "
                            "`all`: no bound, with --strategy dpor)")
        parser.add_argument("--partition", type=partition, default=(1, 1),
                            metavar="I/N", help="explore share I of N of the schedules, split "
                            "by estimated work (merge them with --merge)")

    def new(self, args) -> BoundedDFS:
        if args.preemptions == ALL:
            raise UserError("explore --preemptions all: the full search has no end; the "
                            "reduction explores without a bound (--strategy dpor)")
        return BoundedDFS(args.preemptions, args.partition)

    def heading(self, data: dict) -> str:
        share = "" if data["partition"] == [1, 1] else " · share {}/{}".format(*data["partition"])
        return f"≤ {data['preemptions']} preemptions{share}"

    def scope(self, data: dict) -> str:
        return f"with at most {data['preemptions']} preemptions"



ALL = "all"  # `--preemptions all`: no bound (the reduction's, harness.engine.explore.dpor)


def preemptions(text: str) -> int | str:
    """`explore --preemptions K`: 0 to MAX_PREEMPTIONS, or `all`."""
    if text.strip().lower() == ALL:
        return ALL
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number or 'all'") from None
    if not 0 <= value <= MAX_PREEMPTIONS:
        raise argparse.ArgumentTypeError(f"{text!r}: from 0 to {MAX_PREEMPTIONS} (the schedules "
                                         "grow as replicas × steps to that power)")
    return value


def partition(text: str) -> tuple[int, int]:
    """`explore --partition I/N`: share I of N, 1 ≤ I ≤ N ≤ 1024."""
    m = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)) <= 1024:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share I/N (1 ≤ I ≤ N ≤ 1024)")
    return int(m.group(1)), int(m.group(2))


registry.add_strategy(DFS())
