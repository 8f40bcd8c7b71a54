"""What a plugin imports: the one surface of the engine for tracks, fault kinds and job
schedulers, whether they ship with the lab or come from a folder named in RACELAB_PLUGINS.

Each name is the engine's own object, re-exported; the modules behind them may move, this list
does not. A track's own extension classes (the cron track's `DataFault`, say) come from that
track's package.
"""

from __future__ import annotations

from harness.engine.model.clock import Tick, tick_plan
from harness.engine.model.control import RunControl
from harness.engine.model.events import Event
from harness.engine.model.faults import (
    FaultKind,
    InjectedCrash,
    SeamCrash,
    kind_of,
    of_where,
    restart_times,
)
from harness.engine.model.history import F, Op, Type
from harness.engine.model.registry import add_fault, add_scheduler, add_track
from harness.engine.model.result import RunResult
from harness.engine.model.scenario import Fault, Scenario
from harness.engine.model.schedulers import Scheduler, SchedulerKind, Start
from harness.engine.model.stages import Stage
from harness.engine.model.tracks import NO_RULES, Report, SeamRules, Track
from harness.engine.model.world import Verdict, World

__all__ = [
    "NO_RULES", "Event", "F", "Fault", "FaultKind", "InjectedCrash", "Op", "Report", "RunControl",
    "RunResult", "Scenario", "Scheduler", "SchedulerKind", "SeamCrash", "SeamRules", "Stage",
    "Start", "Tick", "Track", "Type", "Verdict", "World", "add_fault", "add_scheduler",
    "add_track", "kind_of", "of_where", "restart_times", "tick_plan",
]
