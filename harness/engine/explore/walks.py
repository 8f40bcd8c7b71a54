"""Random walks over the schedules (`racelab explore STAGE --strategy random`): each of
`--walks N` schedules picks, at every step, uniformly among the replicas that can move, from a
generator seeded by `--walk-seed` and the walk's number. The same seed walks the same
schedules, whichever worker runs which walk, and `racelab run --schedule` replays any of them.

For trees no exhaustive search finishes (4 replicas and more, long ticks): it samples them and
promises nothing about the schedules it did not walk. Two walks may take the same schedule;
each counts as one schedule explored.
"""

from __future__ import annotations

import random

from harness.engine.explore.steps import View
from harness.engine.explore.strategy import Ran
from harness.engine.model import registry
from harness.engine.model.limits import MAX_SAMPLES, whole_number


class Walk:
    """A chooser that picks uniformly among who can move, from its own seeded generator."""

    def __init__(self, seed: str):
        self.rng = random.Random(seed)

    def choose(self, view: View) -> str:
        return self.rng.choice(sorted(view.next))


class RandomWalks:
    def __init__(self, walks: int, seed: int):
        self.walks, self.seed, self.handed = walks, seed, 0

    def new_execution(self) -> Walk | None:
        if self.handed == self.walks:
            return None
        self.handed += 1
        return Walk(f"{self.seed}:{self.handed}")

    def executed(self, chooser: Walk, ran: Ran) -> None:
        pass

    def to_json(self) -> dict:
        return {"walks": self.walks, "walk_seed": self.seed}


class Random:
    name = "random"
    help = "random walks over the schedules, seeded (--walks, --walk-seed)"

    def add_options(self, parser) -> None:
        parser.add_argument("--walks", type=whole_number(1, MAX_SAMPLES), default=50,
                            help="how many random walks (default 50)")
        parser.add_argument("--walk-seed", type=int, default=1, help="their seed (default 1)")

    def new(self, args) -> RandomWalks:
        return RandomWalks(args.walks, args.walk_seed)

    def heading(self, data: dict) -> str:
        return f"{data['walks']} random walks (seed {data['walk_seed']})"

    def scope(self, data: dict) -> str:
        return f"of {data['walks']} random walks"


registry.add_strategy(Random())
