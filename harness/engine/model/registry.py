"""The extension points, named in one place: tracks, fault kinds, schedulers, the views of a run,
the exploration strategies and the run axes register here.

The lab's own come from `harness.builtins`. More come from the folders named in RACELAB_PLUGINS
(separated by `os.pathsep`): every `*.py` file there is imported once, in name order, and
registers what it defines with `add_track`, `add_fault`, `add_scheduler`, `add_view`,
`add_strategy` or `add_axis`; every stage folder
there (`NN-name/myapp`, or `<track dir>/NN-name/myapp`) joins the stages
(harness.engine.model.stages).
The engine asks this module; it never imports a track, a fault or a scheduler by name.

A leaf: it names what it holds only by the little it needs of them (`Named`, `NamedTrack`), so
the modules that define them (harness.engine.model.tracks, faults, schedulers) can ask it without an
import loop.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from harness.errors import UserError

BUILTINS = "harness.builtins"
PLUGINS_ENV = "RACELAB_PLUGINS"


class Named(Protocol):
    """A fault kind (harness.engine.model.faults.FaultKind) or a scheduler kind
    (harness.engine.model.schedulers.SchedulerKind), as far as the registry is concerned."""

    name: str


class NamedTrack(Named, Protocol):
    """A track (harness.engine.model.tracks.Track), as far as the registry is concerned: its name
    and its own fault kinds."""

    faults: tuple[Named, ...]


@dataclass(frozen=True)
class Hook:
    """An optional member of a plugin's object, declared once with its default (in the manner
    of pluggy's hookspecs): `params` the arguments a method is called with (None: a plain
    attribute), `default(obj)` what stands in where the object has none."""

    name: str
    params: tuple[str, ...] | None
    default: Callable[[Any], Any]

    def of(self, obj: object) -> Any:
        """The object's own member, or the declared default."""
        own = getattr(obj, self.name, _MISSING)
        return self.default(obj) if own is _MISSING else own


@dataclass(frozen=True)
class Spec:
    """What one role of plugin object (a track's report, a world, a scheduler) must have, and
    the optional hooks it may have."""

    role: str
    required: tuple[str, ...]
    optional: tuple[Hook, ...] = ()

    def check(self, obj: object, where: str) -> None:
        """One line and exit 2 for a required member missing, or an optional method that cannot
        take the arguments it is declared with. Checked once per class (a module: once)."""
        key = (self.role, type(obj) if not inspect.ismodule(obj) else id(obj))
        if key in _checked:
            return
        missing = [name for name in self.required if not hasattr(obj, name)]
        if missing:
            raise UserError(f"{where}: its {self.role} has no {', '.join(missing)}")
        for hook in self.optional:
            member = getattr(obj, hook.name, _MISSING)
            if member is _MISSING or hook.params is None:
                continue
            try:
                inspect.signature(member).bind(*hook.params)
            except (TypeError, ValueError):
                raise UserError(f"{where}: its {self.role}'s {hook.name} cannot be called with "
                                f"({', '.join(hook.params)})") from None
        _checked.add(key)


_MISSING = object()
_checked: set[tuple[str, object]] = set()

# the roles the registry itself takes (a track's report, a world and a scheduler are declared
# beside their protocols: model/tracks, model/world, model/schedulers)
# whether a view shows the shared state read after each commit (History.states): a run whose
# views all say False does not read it (a query after every commit)
READS_STATES = Hook("reads_states", None, lambda view: True)
VIEW = Spec("view", ("name", "help", "metavar", "alone", "write"), (READS_STATES,))
# the options of other strategy kinds that one reads too (their dest names): `explore` lets them
# through with it instead of refusing them as another strategy's
BORROWS = Hook("borrows", None, lambda kind: ())
STRATEGY_KIND = Spec("strategy kind", ("name", "help", "add_options", "new", "heading", "scope"),
                     (BORROWS,))
AXIS_DEFAULT = Hook("default", None, lambda axis: None)  # None: a matrix makes every value
AXIS_LABEL = Hook("label", ("value",), lambda axis: None)  # None: NAME=VALUE in a title
AXIS = Spec("axis", ("name", "values", "help", "env"), (AXIS_DEFAULT, AXIS_LABEL))

_tracks: dict[str, NamedTrack] = {}
_faults: dict[str, Named] = {}
_schedulers: list[Named] = []
_views: dict[str, Named] = {}
_strategies: dict[str, Named] = {}
_axes: dict[str, Named] = {}
_loaded: list[bool] = []
_origin: dict[int, str] = {}  # id of what was registered -> the module that registered it


def add_track(track: NamedTrack) -> NamedTrack:
    """Register a track and its own fault kinds."""
    _tracks[track.name] = track
    _origin[id(track)] = _caller()
    for kind in track.faults:
        _faults[kind.name] = kind
        _origin[id(kind)] = _origin[id(track)]
    return track


def add_fault(kind: Named) -> Named:
    _faults[kind.name] = kind
    _origin[id(kind)] = _caller()
    return kind


def add_scheduler(kind: Named) -> Named:
    _schedulers.append(kind)
    _origin[id(kind)] = _caller()
    return kind


def add_view(view: Named) -> Named:
    """Register a view of a run (harness.engine.views.run_views.RunView): its name is its
    option of `racelab run` (and of `step`, for a view written to a file)."""
    return _add_unique(_views, view, VIEW, _caller())


def add_strategy(kind: Named) -> Named:
    """Register an exploration strategy (harness.engine.explore.strategy.StrategyKind): its
    name is `racelab explore --strategy NAME`."""
    return _add_unique(_strategies, kind, STRATEGY_KIND, _caller())


def add_axis(axis: Named) -> Named:
    """Register a run axis (harness.engine.model.axes.Axis): every matrix cell is made once per
    value of it, or, for one with a default, every run has its default unless chosen."""
    caller = _caller()
    AXIS.check(axis, f"{caller}: axis {getattr(axis, 'name', axis)!r}")
    if not axis.values or "=" in axis.name or any("=" in v or not v for v in axis.values):
        raise UserError(f"{caller}: axis {axis.name!r} needs values, and neither its name nor "
                        "a value may hold '=' or be empty")
    if (default := AXIS_DEFAULT.of(axis)) is not None and (default not in axis.values
                                                          or "all" in axis.values):
        raise UserError(f"{caller}: axis {axis.name!r}: its default {default!r} must be one of "
                        "its values, and 'all' none of them (matrix --NAME all means each)")
    return _add_unique(_axes, axis, AXIS, caller)


def _add_unique(table: dict[str, Named], obj: Named, spec: Spec, caller: str) -> Named:
    """`obj` checked against its role's declaration and added under its name, which no other
    of its role may have."""
    spec.check(obj, f"{caller}: {spec.role} {getattr(obj, 'name', obj)!r}")
    if obj.name in table:
        raise UserError(f"{caller}: a {spec.role} named {obj.name!r} is registered already")
    table[obj.name] = obj
    _origin[id(obj)] = caller
    return obj


def _caller() -> str:
    """The module whose code called add_*, two frames up."""
    return sys._getframe(2).f_globals.get("__name__", "")


def tracks() -> dict[str, NamedTrack]:
    """Every track, in registration order (the lab's own first)."""
    _load()
    return _tracks


def track(name: str) -> NamedTrack:
    return tracks()[name]


def fault_kinds() -> dict[str, Named]:
    """Every fault kind by name, in registration order."""
    _load()
    return _faults


def schedulers() -> list[Named]:
    """Every scheduler kind; each decides for itself whether it starts a stage's jobs."""
    _load()
    return _schedulers


def views() -> dict[str, Named]:
    """Every view of a run by name, in registration order (the lab's own first)."""
    _load()
    return _views


def strategies() -> dict[str, Named]:
    """Every exploration strategy by name, in registration order (the lab's own first)."""
    _load()
    return _strategies


def axes() -> dict[str, Named]:
    """Every run axis by name, in registration order."""
    _load()
    return _axes


def plugin_roots() -> list[Path]:
    """The folders named in RACELAB_PLUGINS that exist."""
    raw = os.environ.get(PLUGINS_ENV, "")
    return [Path(p).resolve() for p in raw.split(os.pathsep) if p and Path(p).is_dir()]


def _load() -> None:
    if _loaded:
        return
    _loaded.append(True)
    _in_catalogue_order(importlib.import_module(BUILTINS).MODULES)
    for root in plugin_roots():
        for path in sorted(root.glob("*.py")):
            name = f"racelab_plugin_{path.stem}"
            if name in sys.modules:
                continue
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except UserError:
                raise
            except Exception as e:  # noqa: BLE001 - a plugin's own error, said in one line
                raise UserError(f"{PLUGINS_ENV}: {path}: {type(e).__name__}: {e}") from None


def _in_catalogue_order(modules: tuple[str, ...]) -> None:
    """The lab's own in the order harness.builtins lists their modules, whichever of them a
    caller happened to import first; anything else after them, in registration order."""
    def rank(obj: object) -> int:
        origin = _origin.get(id(obj), "")
        return next((i for i, m in enumerate(modules)
                     if origin == m or origin.startswith(m + ".")), len(modules))

    for table in (_tracks, _faults, _views, _strategies, _axes):
        ordered = sorted(table.items(), key=lambda item: rank(item[1]))  # stable
        table.clear()
        table.update(ordered)
    _schedulers.sort(key=rank)
