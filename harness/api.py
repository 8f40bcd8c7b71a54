"""What a plugin imports: the one surface of the engine for tracks, fault kinds, job schedulers,
views of a run, exploration strategies and run axes, whether they ship with the lab or come
from a folder named in RACELAB_PLUGINS.

Each name is the engine's own object, re-exported; the modules behind them may move, this list
does not. A track's own extension classes (the cron track's `DataFault`, say) come from that
track's package.
"""

from __future__ import annotations

from harness.engine.explore.steps import Chooser, Step, View, default_choice
from harness.engine.explore.strategy import Ahead, Ran, Strategy, StrategyKind
from harness.engine.model.axes import Axis, Settings
from harness.engine.model.clock import Tick, tick_plan
from harness.engine.model.control import RunControl
from harness.engine.model.faults import (
    FaultKind,
    InjectedCrash,
    SeamCrash,
    kind_of,
    of_where,
    restart_times,
)
from harness.engine.model.history import Event, F, Op, Type
from harness.engine.model.registry import (
    add_axis,
    add_fault,
    add_scheduler,
    add_strategy,
    add_track,
    add_view,
)
from harness.engine.model.result import RunResult
from harness.engine.model.scenario import Fault, Scenario
from harness.engine.model.schedulers import Scheduler, SchedulerKind, Start
from harness.engine.model.stages import Stage
from harness.engine.model.tracks import NO_RULES, Report, SeamRules, Track
from harness.engine.model.world import Verdict, World
from harness.engine.views.run_views import RunView

__all__ = [
    "NO_RULES", "Ahead", "Axis", "Chooser", "Event", "F", "Fault", "FaultKind", "InjectedCrash",
    "Op", "Ran", "Report", "RunControl", "RunResult", "RunView", "Scenario", "Scheduler",
    "SchedulerKind", "SeamCrash", "SeamRules", "Settings", "Stage", "Start", "Step", "Strategy",
    "StrategyKind", "Tick", "Track", "Type", "Verdict", "View", "World", "add_axis",
    "add_fault", "add_scheduler", "add_strategy", "add_track", "add_view", "default_choice",
    "kind_of", "of_where", "restart_times", "tick_plan",
]
