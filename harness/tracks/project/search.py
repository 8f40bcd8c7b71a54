"""find-race for a project (`racelab find-race --project DIR`): hypothesis draws scenarios on
the job's own slots (1 to 4 replicas, each firing up to 15 minutes after a slot, its clock up
to 90 s off, and up to 2 kills, pauses or deploys in the first slot), runs each once, and
shrinks the first one in which an effect lands more often than its `expect` allows, or a slot
misses one in a run no fault struck."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import strategies as st

from harness.engine.model import registry
from harness.engine.model import scenario as scenarios
from harness.engine.model.scenario import Fault, Scenario, replica_names
from harness.engine.model.stages import Stage
from harness.tracks.cron.search import Search, shrink
from harness.tracks.project import description

MAX_REPLICAS = 4
MAX_OFFSET = timedelta(minutes=15)  # a scheduler firing late, within the slot's first minutes
STEP = timedelta(minutes=1)
MAX_SKEW = timedelta(seconds=90)
SKEW_STEP = timedelta(seconds=10)
FAULTS = ("kill-mid-tick", "pause", "deploy-restart")
MAX_FAULTS = 2


def _scenarios(base: Scenario, every: timedelta):
    """Scenarios like `base` (the job's slots), with their replicas, clocks and faults drawn."""
    latest = min(every, MAX_OFFSET) // STEP - 1

    @st.composite
    def draw_one(draw) -> Scenario:
        offsets = st.integers(0, latest).map(STEP.__mul__)
        skews = st.integers(-MAX_SKEW // SKEW_STEP, MAX_SKEW // SKEW_STEP).map(SKEW_STEP.__mul__)
        clocks = draw(st.lists(st.tuples(offsets, skews), min_size=1, max_size=MAX_REPLICAS))
        names = replica_names(len(clocks))
        faults = draw(st.lists(st.builds(
            Fault, st.sampled_from(FAULTS),
            st.integers(0, latest).map(lambda k: base.start + STEP * k),
            st.sampled_from(names)), max_size=MAX_FAULTS))
        return replace(base, name="race", replicas=len(clocks),
                       offsets=tuple(o for o, _ in clocks), skew=tuple(s for _, s in clocks),
                       faults=tuple(faults), seed=draw(st.integers(0, 999)))

    return draw_one()


def broken_promises(s: Scenario, verdict) -> list[str]:
    """What the run broke, in words: an effect over its expectation in a slot, or short of it
    in a run that no fault struck (a killed job may rightly leave a slot to the next)."""
    broken = [f"{c.slot.isoformat(timespec='minutes')}: {c.landed} {c.effect.name}, expected "
              f"{c.effect.expect}" for c in verdict.parts()
              if c.duplicates or (c.missed and not s.faults)]
    return broken


def find_race(stage: Stage, max_examples: int = 100, run_settings: tuple = ()) -> Search:
    """Search the project's scenarios for a broken promise, and shrink it (the cron track's
    search loop, harness.tracks.cron.search.shrink, on this track's scenarios and promise)."""
    job = description.read(stage.path)
    base = registry.track("project").fit(stage, scenarios.resolve("staggered", "project"))
    return shrink(stage, _scenarios(base, job.every), broken_promises, max_examples,
                  run_settings)
