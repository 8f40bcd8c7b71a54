"""The `racelab` fixture's handle on a project of the user's own (docs/own-job.md): the runs and
explorations the CLI makes, as objects with plain attributes to assert on, each of whose repr
says what happened and how to replay it, so a failing `assert` shows that in pytest's report.
"""

from __future__ import annotations

import argparse
import io
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from harness.engine.explore import replay, strategy
from harness.engine.explore.steps import Stepper
from harness.engine.model import registry, stages
from harness.engine.model import scenario as scenarios
from harness.engine.model.result import RunResult
from harness.engine.model.scenario import Scenario
from harness.engine.run import runner
from harness.engine.views import run_views
from harness.errors import UserError
from harness.tracks.project import description

TRACK = "project"


@dataclass(frozen=True)
class Run:
    """One run: its counts, each effect's counts slot by slot (`effects["digests"] == [2, 1]`),
    the schedule it replayed (or ""), and what a person reads of it."""

    duplicates: int
    missed: int
    effects: dict[str, list[int]]
    schedule: str
    replay: str  # the command that runs it again
    text: str = field(repr=False)  # the table, the findings, the timeline
    json: dict = field(repr=False)  # what `racelab run --json` prints

    def __repr__(self) -> str:
        return f"<racelab run: {self.replay}\n{self.text}>"


@dataclass(frozen=True)
class Bad:
    """A bad outcome of an exploration: its words, how many schedules, the shortest of them,
    and the command that replays that one."""

    outcome: str
    schedules: int
    schedule: str
    replay: str


@dataclass(frozen=True)
class Exploration:
    """An exploration: its schedules, every outcome (words → schedules), and the bad ones."""

    schedules: int
    outcomes: dict[str, int]
    bad: list[Bad]
    complete: bool
    json: dict = field(repr=False)  # what `racelab explore --json` prints


class Lab:
    """A project's runs and explorations in this test process (the replicas are processes of
    their own, as for every racelab command)."""

    def __init__(self, folder: Path, seed: int | None = None, schedule: str | None = None,
                 scenario: str | None = None):
        self.folder = folder.resolve()
        description.read(self.folder)  # its own errors: no pyproject.toml, no table, a key
        self.stage = stages.resolve(str(self.folder))
        self.seed, self.schedule, self.scenario = seed, schedule, scenario
        self.told: list[str] = []  # each run and exploration in words, for a failure's report

    def _scenario(self, name: str | None, replicas: int | None, seed: int | None) -> Scenario:
        s = scenarios.resolve(name or self.scenario or registry.track(TRACK).default_scenario,
                              TRACK)
        s = registry.track(TRACK).fit(self.stage, s)
        if replicas is not None:
            s = s.with_replicas(replicas)
        if (seed := seed if seed is not None else self.seed) is not None:
            s = s.with_seed(seed)
        return s

    def _command(self, verb: str, s: Scenario, *extra: str) -> str:
        """The command line that makes it again, as the project's owner types it."""
        chosen = s.seed != scenarios.resolve(s.name, TRACK).seed  # --racelab-seed, seed=
        seed = ("--seed", str(s.seed)) if chosen else ()
        return shlex.join(["racelab", verb, "--project", str(self.folder), "--scenario", s.name,
                           "--replicas", str(s.replicas), *seed, *extra])

    def run(self, scenario: str | None = None, replicas: int | None = None,
            seed: int | None = None, schedule: str | None = None) -> Run:
        """One run, as `racelab run --project DIR` makes it; `schedule` (or pytest's
        --racelab-replay) replays a schedule an exploration printed."""
        s = self._scenario(scenario, replicas, seed)
        schedule = schedule if schedule is not None else self.schedule
        if schedule is None:
            result = runner.run(self.stage, s)
        else:
            chooser = Stepper(replay.Schedule(replay.parse_schedule(schedule)))
            result = runner.run(self.stage, s, interleaver=chooser)
        extra = ("--schedule", schedule) if schedule is not None else ()
        run = Run(result.verdict.duplicates, result.verdict.missed, result.verdict.per_effect(),
                  schedule or "", self._command("run", s, *extra), _words(result),
                  result.to_json())
        self.told.append(f"replay: {run.replay}\n{run.text}")
        return run

    def explore(self, preemptions: int | str = 1, replicas: int = 2,
                scenario: str = "simultaneous", strategy_name: str = "dfs") -> Exploration:
        """Every schedule up to `preemptions` (or what `strategy_name` picks), as `racelab
        explore --project DIR` makes them."""
        s = self._scenario(scenario, replicas, None)
        kinds = registry.strategies()
        if strategy_name not in kinds:
            raise UserError(f"explore: no strategy {strategy_name!r}; the strategies: "
                            f"{', '.join(kinds)}")
        parser = argparse.ArgumentParser(prog="racelab explore")
        for kind in kinds.values():  # every strategy's options, as the CLI has them
            kind.add_options(parser.add_argument_group(kind.name))
        args = parser.parse_args(["--preemptions", str(preemptions)])
        kind = kinds[strategy_name]
        found = strategy.explore(self.stage, s, kind.new(args), kind.name).to_json()
        if not found["complete"]:  # Ctrl-C: the test stops, never passes on a part
            raise KeyboardInterrupt
        bad = [Bad(o["outcome"], o["schedules"], o["shortest"],
                   self._command("run", s, "--schedule", o["shortest"]))
               for o in found["outcomes"] if o["bad"]]
        outcomes = {o["outcome"]: o["schedules"] for o in found["outcomes"]}
        self.told.append("\n".join([
            f"explored {found['schedules']} schedules of {s.name}, {s.replicas} replicas, "
            f"{strategy_name} (preemptions {preemptions}): "
            + ", ".join(f"{words}: {n}" for words, n in outcomes.items()),
            *(f"  bad: {b.outcome} in {b.schedules}; the shortest replays with: {b.replay}"
              for b in bad)]))
        return Exploration(found["schedules"], outcomes, bad, found["complete"], found)


def _words(result: RunResult) -> str:
    """The run as `racelab run --timeline` prints it, without colour, 100 columns wide."""
    out = io.StringIO()
    console = Console(file=out, width=100, color_system=None, highlight=False)
    run_views.run_result(console, result, timeline=True)
    return out.getvalue().rstrip()
