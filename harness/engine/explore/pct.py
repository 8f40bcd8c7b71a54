"""Probabilistic concurrency testing (`racelab explore STAGE --strategy pct`), as Burckhardt,
Kothari, Musuvathi and Nagarakatte give it (ASPLOS 2010): for a bound `--depth d`, each of
`--runs N` schedules gives the processes random distinct priorities d … d+n-1 and picks d-1
random change points among the k steps; at every step the highest-priority process that can
move goes, and at the i-th change point the one about to go drops to priority i (so another
goes instead). A bug that needs d ordering constraints between steps (its depth) is found by
one run with probability at least 1/(n·k^(d-1)): the bound each exploration prints and says in
its JSON.

The bound rests on two numbers of ours, said where it stands: k is the steps of the schedule
without preemption (run once before the search, not counted; another schedule may take more
steps, or fewer), and n the processes that moved in it. Each run's generator is seeded by
`--pct-seed` and the run's number: the same seed takes the same schedules, whichever worker
runs which, and `racelab run --schedule` replays any of them.
"""

from __future__ import annotations

import random

from harness.engine.explore.steps import View, default_choice
from harness.engine.explore.strategy import Ahead, Ran
from harness.engine.model import registry
from harness.engine.model.limits import MAX_SAMPLES, whole_number

MAX_BUG_DEPTH = 5


class Priorities:
    """A chooser: the highest-priority process that can move goes; at a change point the one
    about to go drops to that point's low priority first."""

    def __init__(self, seed: str, processes: list[str], depth: int, steps: int):
        self.rng = random.Random(seed)
        order = list(processes)
        self.rng.shuffle(order)
        self.priority = {name: depth + i for i, name in enumerate(order)}
        points = self.rng.sample(range(1, steps + 1), min(depth - 1, steps))
        self.change = {step: low for low, step in enumerate(sorted(points), start=1)}
        self.step = 0

    def choose(self, view: View) -> str:
        self.step += 1
        for name in sorted(view.next):  # one the first run never saw moves: a priority at once
            self.priority.setdefault(name, len(self.priority) + self.rng.random())
        going = max(view.next, key=self.priority.__getitem__)
        if self.step in self.change:
            self.priority[going] = self.change[self.step]
            going = max(view.next, key=self.priority.__getitem__)
        return going


class PCT:
    def __init__(self, runs: int, depth: int, seed: int):
        self.runs, self.depth, self.seed, self.handed = runs, depth, seed, 0
        self.processes: list[str] = []
        self.steps = 0

    def plan(self, ahead: Ahead) -> None:
        """k and n: the schedule without preemption, run once (not one of the N)."""
        ran = ahead.run([_Default()])[0]
        self.steps = len(ran.steps)
        self.processes = sorted({name for step in ran.steps for name in step.options})

    def new_execution(self) -> Priorities | None:
        if self.handed == self.runs:
            return None
        self.handed += 1
        return Priorities(f"{self.seed}:{self.handed}", self.processes, self.depth,
                          max(self.steps, 1))

    def executed(self, chooser: Priorities, ran: Ran) -> None:
        pass

    def bound(self) -> float:
        """PCT's lower bound on one run finding a bug of depth d: 1/(n·k^(d-1))."""
        n, k = max(len(self.processes), 1), max(self.steps, 1)
        return 1 / (n * k ** (self.depth - 1))

    def to_json(self) -> dict:
        p = self.bound()
        return {"runs": self.runs, "depth": self.depth, "pct_seed": self.seed,
                "processes": len(self.processes), "steps": self.steps,
                "bound": round(p, 6), "bound_over_runs": round(1 - (1 - p) ** self.runs, 6)}


class _Default:
    """The schedule without preemption."""

    def choose(self, view: View) -> str:
        return default_choice(view)


class PCTKind:
    name = "pct"
    help = ("probabilistic concurrency testing: random priorities and change points, with "
            "PCT's bound on finding a bug of a given depth (--runs, --depth, --pct-seed)")

    def add_options(self, parser) -> None:
        parser.add_argument("--runs", type=whole_number(1, MAX_SAMPLES), default=50,
                            help="how many runs (default 50)")
        parser.add_argument("--depth", type=whole_number(1, MAX_BUG_DEPTH), default=2,
                            help=f"the bug depth it is for, 1 to {MAX_BUG_DEPTH} (default 2)")
        parser.add_argument("--pct-seed", type=int, default=1, help="their seed (default 1)")

    def new(self, args) -> PCT:
        return PCT(args.runs, args.depth, args.pct_seed)

    def heading(self, data: dict) -> str:
        return (f"PCT depth {data['depth']} · {data['runs']} runs (seed {data['pct_seed']}) · "
                f"each finds a bug of depth {data['depth']} with probability ≥ "
                f"{data['bound']:.3g}, all {data['runs']} ≥ {data['bound_over_runs']:.3g} (PCT's "
                f"bound for n = {data['processes']} processes, k = {data['steps']} steps: those "
                "of the schedule without preemption)")

    def scope(self, data: dict) -> str:
        return f"of {data['runs']} PCT runs"


registry.add_strategy(PCTKind())
