"""Many runs at once: the cells of a matrix, side by side.

Each cell (harness.engine.model.axes.Cell: a stage, a scenario and a value of each registered
run axis) is an ordinary run with its own database and replicas. The harness mostly waits on
its replicas, so threads are enough: one per core (RACELAB_JOBS to choose) keeps the cores
busy. The longest cells start first (a week is 2,016 ticks, a canonical cell a handful), so no
long cell starts last while the other cores idle. Ctrl-C stops every running cell at its next
instant; each cleans up as a lone run does.

A cell whose count turns on which of two waiters PostgreSQL lets on first (the `raced` mark) is
repeated while they go on out of the order they began to wait (`runner.run_in_order`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from harness.engine.model import assumptions, axes, registry, stages
from harness.engine.model import scenario as scenarios
from harness.engine.model.axes import Cell
from harness.engine.model.clock import tick_plan
from harness.engine.model.faults import kind_of, restart_times
from harness.engine.run import fleet, replica, runner, zygote
from harness.infra import services


def jobs() -> int:
    """RACELAB_JOBS if it is a positive number, else one per core."""
    text = os.environ.get("RACELAB_JOBS", "")
    return int(text) if text.isdigit() and int(text) > 0 else (os.cpu_count() or 1)


def of(track: str, chosen: list[stages.Stage] | None = None,
       values: dict[str, tuple[str, ...]] | None = None) -> list[Cell]:
    """Every cell of the track's matrix (of the `chosen` stages): each stage × each canonical
    scenario it can carry × each combination of the run axes' values (of an axis with a
    default: the `values` asked for, else the default alone)."""
    fit = registry.track(track).fit  # an app's own slots (the project track's)
    return [Cell(st, scenario, settings)
            for st in (stages.stages_of(track) if chosen is None else chosen)
            for canonical in scenarios.canonical(track)
            for scenario in [fit(st, canonical) if fit else canonical]
            if applies(st, scenario)
            for settings in axes.every_setting(values)]


def applies(stage: stages.Stage, scenario: scenarios.Scenario) -> bool:
    """Same track, and every fault one a run of the stage can carry (a scheduler's fault only
    where a scheduler starts the jobs)."""
    return stage.track == scenario.track and all(kind_of(f).applies_to(stage)
                                                 for f in scenario.faults)


def run_cell(stage: stages.Stage, scenario: scenarios.Scenario,
             settings: axes.Settings = (), states: bool = True) -> runner.RunResult:
    """One cell's run, as the matrix, the README and its pictures show it."""
    if any(m.kind.in_order for m in assumptions.of_run(stage, scenario)):
        return runner.run_in_order(stage, scenario, settings=settings, states=states)
    return runner.run(stage, scenario, settings=settings, states=states)


def ticks(s: scenarios.Scenario) -> int:
    """The ticks a run of the scenario makes (restarts included)."""
    return len(tick_plan(s, restart_times(s)))


def run_all(cells: list[Cell],
            waiting: Callable[[int, Cell], None] = lambda done, cell: None,
            states: bool = True) -> list[runner.RunResult]:
    """The results in the cells' order; `waiting(done, cell)` before waiting for each;
    `states`: the runs read the shared state after each commit (for pictures: runner.run)."""
    if not cells:
        return []
    services.postgres()  # found once, before the threads ask
    replica.prepare()
    with fleet.stopping_together(), zygote.KEPT.keeping(), ThreadPoolExecutor(jobs()) as pool:
        order = sorted(range(len(cells)), key=lambda i: -ticks(cells[i].scenario))
        submitted = {i: pool.submit(run_cell, cells[i].stage, cells[i].scenario,
                                    cells[i].settings, states) for i in order}
        try:
            results = []
            for i, cell in enumerate(cells):
                waiting(i, cell)
                results.append(submitted[i].result())
            return results
        except BaseException:
            fleet.STOP.set()  # every running cell stops at its next instant and cleans up
            pool.shutdown(wait=True, cancel_futures=True)
            raise
