"""Run axes: a setting every run is made with besides its stage and scenario, each one a
registered object (registry.add_axis), none in the lab itself.

A matrix makes each of its cells once per value of each axis, and a `Cell` is that value: a
stage, a scenario and the axes' values (`settings`, in registration order). The matrix shows
each value under its scenario's name, the page anchors a cell by all three, a run's JSON says
its `settings`, and `racelab run --set AXIS=VALUE` makes one such run. What a value does to a
run is the axis's to say: the environment it adds to every replica's and task's process
(`env`), so a PostgreSQL setting reaches every session through PGOPTIONS.
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


def every_setting() -> list[Settings]:
    """Each combination of the registered axes' values, in their order ([()] with none)."""
    combos: list[Settings] = [()]
    for axis in registry.axes().values():
        combos = [(*c, (axis.name, v)) for c in combos for v in axis.values]
    return combos


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


def parse(texts: list[str] | None) -> Settings:
    """`run --set AXIS=VALUE` (repeatable): a value of a registered axis, in their order."""
    axes = registry.axes()
    given: dict[str, str] = {}
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
        if name in given:
            raise UserError(f"--set {text!r}: {name} is set twice")
        given[name] = value
    return tuple((name, given[name]) for name in axes if name in given)


def words(settings: Settings) -> str:
    """`statement_timeout=1s` for a header, a title or a command line ('' with none)."""
    return " ".join(f"{name}={value}" for name, value in settings)
