"""Run axes: a setting every run is made with besides its stage and scenario, each one a
registered object (registry.add_axis); the lab's own is the transaction isolation level
(harness.axes.isolation).

An axis with no `default` multiplies a matrix: it makes each of its cells once per value, and
a `Cell` is that value: a stage, a scenario and the axes' values (`settings`, in registration
order). The matrix shows each value under its scenario's name, the page anchors a cell by all
three, a run's JSON says its `settings`, and `racelab run --set AXIS=VALUE` makes one such run.

An axis with a `default` is a setting every run has whether asked for or not (PostgreSQL's
isolation level: read committed unless chosen): every run's settings hold its value, so the
JSON, the timeline, the picture and the page say it; it is an option of its own on every
command that runs a stage (`--NAME VALUE`), and a matrix makes its cells at the default alone
unless `matrix --NAME all` (or a value) asks for more.

What a value does to a run is the axis's to say: the environment it adds to every replica's and
task's process (`env`), so a PostgreSQL setting reaches every session through PGOPTIONS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from harness.engine.model import registry
from harness.errors import UserError, did_you_mean

if TYPE_CHECKING:
    from harness.engine.model.scenario import Scenario
    from harness.engine.model.stages import Stage

Settings = tuple[tuple[str, str], ...]  # (axis name, value), in the axes' registration order


class Axis(Protocol):
    name: str  # its key in `settings`, a run's JSON and `run --set NAME=VALUE`
    values: tuple[str, ...]  # a matrix makes each cell once per value, in this order
    help: str

    def env(self, value: str) -> dict[str, str]:
        """What a run with this value adds to the environment of every replica and task."""
        ...

    # optional (registry.AXIS declares them with their defaults):
    # default: str | None — the value of a run that chose none (None: the axis multiplies a
    #     matrix, and a run without --set has no value of it)
    # def label(self, value: str) -> str — the value in a title ("read committed"; else
    #     "NAME=VALUE")


@dataclass(frozen=True)
class Cell:
    """One cell of a matrix: a stage, a scenario and a value of each registered axis."""

    stage: Stage
    scenario: Scenario
    settings: Settings = ()

    @property
    def column(self) -> tuple[str, Settings]:
        """The matrix column it falls in: its scenario's name and its axes' values."""
        return self.scenario.name, self.settings


def default(axis) -> str | None:
    return registry.AXIS_DEFAULT.of(axis)


def with_defaults() -> list[Axis]:
    """The axes with a default: each an option of its own (`--NAME VALUE`)."""
    return [a for a in registry.axes().values() if default(a) is not None]


def every_setting(chosen: dict[str, tuple[str, ...]] | None = None) -> list[Settings]:
    """Each combination of the axes' values a matrix makes, in their order ([()] with none):
    every value of an axis with no default; of one with a default, the values `chosen` gives
    it (`matrix --NAME all`: all), else its default alone."""
    combos: list[Settings] = [()]
    for axis in registry.axes().values():
        values = axis.values if default(axis) is None else (chosen or {}).get(
            axis.name, (default(axis),))
        combos = [(*c, (axis.name, v)) for c in combos for v in values]
    return combos


def complete(settings: Settings) -> Settings:
    """`settings` with each axis that has a default and is not in them at its default, in the
    axes' order: what a run was made with."""
    given = dict(settings)
    return tuple((a.name, given[a.name] if a.name in given else default(a))
                 for a in registry.axes().values()
                 if a.name in given or default(a) is not None)


HARNESS_ENV = ("DATABASE_URL", "DB_POOL_SIZE", "PGAPPNAME", "REPLICA")  # the harness's own


def env(settings: Settings) -> dict[str, str]:
    """The environment a run with these settings adds to its processes (PGOPTIONS joined);
    an axis may not set what the harness sets (the pool, and the name each process's sessions
    are found by)."""
    out: dict[str, str] = {}
    for name, value in settings:
        for key, text in registry.axes()[name].env(value).items():
            if key in HARNESS_ENV:
                raise UserError(f"axis {name!r}: {key} is the harness's to set")
            out[key] = join(out, key, text)
    return out


def join(env_: dict[str, str], key: str, text: str) -> str:
    """`text` as the value of `key` beside what env_ has: PGOPTIONS are joined, else replaced."""
    return f"{env_[key]} {text}" if key == "PGOPTIONS" and key in env_ else text


def parse(texts: list[str] | None, args=None) -> Settings:
    """`run --set AXIS=VALUE` (repeatable) and `--NAME VALUE` of an axis with a default: a
    value of each registered axis given, in their order, the defaults filled in (`complete`)."""
    axes = registry.axes()
    given: dict[str, str] = {}
    for axis in with_defaults():
        if (value := getattr(args, option_dest(axis), None)) is not None:
            given[axis.name] = value
    for text in texts or []:
        name, eq, value = text.partition("=")
        if not eq or not value:
            raise UserError(f"--set {text!r}: give AXIS=VALUE")
        if name not in axes:
            known = ", ".join(axes) or "none is registered"
            raise UserError(f"--set {text!r}: no axis {name!r}{did_you_mean(name, axes)} "
                            f"(axes: {known})")
        if value not in axes[name].values:
            raise UserError(f"--set {text!r}: {name} takes {', '.join(axes[name].values)}")
        if name in given and getattr(args, option_dest(axes[name]), None) is not None:
            raise UserError(f"--set {text!r}: --{name} gives {name} already")
        if name in given:
            raise UserError(f"--set {text!r}: {name} is set twice")
        given[name] = value
    return complete(tuple((name, given[name]) for name in axes if name in given))


def option_dest(axis) -> str:
    return f"axis:{axis.name}"


def add_options(parser, matrix: bool = False) -> None:
    """`--NAME VALUE` for each axis with a default, on a command that runs a stage; on
    `matrix`, VALUE may be `all` (a cell per value)."""
    for axis in with_defaults():
        values = (*axis.values, "all") if matrix else axis.values
        parser.add_argument(f"--{axis.name}", choices=values, dest=option_dest(axis),
                            help=f"{axis.help} (default {default(axis)}"
                            + ("; all: a cell per level)" if matrix else ")"))


def options(settings: Settings) -> str:
    """` --NAME VALUE` for each value not its axis's default (` --set NAME=VALUE` for an axis
    with none): what a command line adds to make a run with these settings again."""
    out = ""
    for name, value in settings:
        axis = registry.axes()[name]
        if default(axis) is None:
            out += f" --set {name}={value}"
        elif value != default(axis):
            out += f" --{name} {value}"
    return out


def chosen(args) -> dict[str, tuple[str, ...]]:
    """What `matrix --NAME VALUE|all` asks of each axis with a default."""
    out = {}
    for axis in with_defaults():
        if (value := getattr(args, option_dest(axis), None)) is not None:
            out[axis.name] = axis.values if value == "all" else (value,)
    return out


def label(name: str, value: str) -> str:
    """One value in a title: the axis's own words for it, else NAME=VALUE."""
    axis = registry.axes().get(name)
    own = registry.AXIS_LABEL.of(axis) if axis is not None else None
    return own(value) if own is not None else f"{name}={value}"


def words(settings: Settings) -> str:
    """`statement_timeout=1s` for a header, a command line or a status ('' with none)."""
    return " ".join(f"{name}={value}" for name, value in settings)


def titled(settings: Settings) -> str:
    """The values as a title says them: `read committed · statement_timeout=1s`."""
    return " · ".join(label(name, value) for name, value in settings)
