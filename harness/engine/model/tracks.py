"""A track: one scheduled job's story, with its stages, world, checker, report, scenarios and
fault kinds. Each track registers one `Track` (harness.engine.model.registry.add_track); the engine
reaches everything track-specific through it and never names a track.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import psycopg

from harness.engine.model.registry import Hook, Spec
from harness.engine.model.world import World

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

    from harness.engine.model.faults import FaultKind
    from harness.engine.model.result import RunResult
    from harness.engine.model.scenario import Scenario
    from harness.engine.model.stages import Stage


@dataclass(frozen=True)
class SeamRules:
    """A track's words for its SQL: a claim, its sentinel check, the writes a crash follows."""

    claim_table: str = ""  # INSERT … RETURNING into it: a claim, won or lost
    sentinel: str = ""  # a regex on a SELECT: the sentinel check, found or absent
    crash_tables: frozenset[str] = frozenset()  # the writes crash-after-first-write follows
    loggers: tuple[str, ...] = ("myapp",)  # whose records (INFO and up) join the timeline
    hooks: str = ""  # a module whose install(seams) wraps the app's own decisions, before import
    # psycopg used directly is watched too (harness.engine.inside.seam_psycopg), not only
    # SQLAlchemy: a project's job may hold its own connection
    direct_psycopg: bool = False


NO_RULES = SeamRules()


class Report(Protocol):
    """What people look at for a run of the track (a module of its own, as a rule)."""

    MATRIX_CAPTION: str
    LABELS: dict[str, str]  # the timeline's words for what the seams saw

    def run_table(self, result: RunResult) -> Table: ...

    def cell(self, result: RunResult) -> Text:
        """One matrix cell."""
        ...

    def findings(self, result: RunResult) -> list[Text]:
        """The run's findings in words, printed under its table."""
        ...

    # optional: the hooks of REPORT below, each with its default


def _run_words(report: object) -> Callable[[Any], str]:
    word = RUN_WORD.of(report)
    return lambda v: f"{v.runs} {word}{'' if v.runs == 1 else 's'}"


# `racelab explore`'s outcomes: what one run landing is ("payout"), or, where a run lands more
# than one kind of thing, the outcome in words from the verdict
RUN_WORD = Hook("RUN_WORD", None, lambda report: "run")
OUTCOME_WORDS = Hook("outcome_words", ("verdict",), _run_words)
# a run's picture: the track's marks on its side effects and misses, keyed by position in the
# ops it is given (the history in the picture's order); its words for the shared state
PICTURE_MARKS = Hook("picture_marks", ("result", "ops"), lambda report: lambda r, o: {})
PICTURE_STATE = Hook("picture_state", ("value",), lambda report: lambda v: ("", {}))
REPORT = Spec("report", ("MATRIX_CAPTION", "LABELS", "run_table", "cell", "findings"),
              (RUN_WORD, OUTCOME_WORDS, PICTURE_MARKS, PICTURE_STATE))


class Totals:
    """Verdict counts summed over a verdict's parts (its `parts()`); `runs` and `partial` are
    the track's own."""

    runs: int
    partial: int

    def parts(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def total(self, name: str) -> int:
        return sum(getattr(p, name) for p in self.parts())

    def counts(self) -> dict[str, int]:
        """The counts every track reports, in the order its JSON lists them."""
        return {"runs": self.runs, "expected": self.expected, "duplicates": self.duplicates,
                "missed": self.missed, "partial": self.partial}

    @property
    def expected(self) -> int:
        return self.total("expected")

    @property
    def duplicates(self) -> int:
        return self.total("duplicates")

    @property
    def missed(self) -> int:
        return self.total("missed")

    @property
    def overlapped(self) -> int:
        """Runs of consecutive slots that ran at once, where the track can see it (0 here)."""
        return 0


class Landed:
    """What landed of one thing against what should have: `landed()` and `expected`."""

    expected: int

    def landed(self) -> int:
        raise NotImplementedError

    @property
    def duplicates(self) -> int:
        return max(0, self.landed() - self.expected)

    @property
    def missed(self) -> int:
        return max(0, self.expected - self.landed())


@dataclass(frozen=True)
class Track:
    name: str
    # where its stage folders sit under a root: "" (the root itself) or a folder; None: its
    # stages are folders named on the command line (`claims` below), never listed
    stage_dir: str | None
    home: Path  # its package folder; its canonical scenarios are home/scenarios/*.toml
    scenario_order: tuple[str, ...]  # the matrix's column order
    default_scenario: str  # what `racelab run STAGE` runs without --scenario
    open_world: Callable[[psycopg.Connection, Scenario, str], World]  # (conn, scenario, run id)
    report: Report
    faults: tuple[FaultKind, ...] = ()  # its own fault kinds, registered with it
    # what [world] may say: each key's type of value, or (str, the longest name its table takes)
    world_keys: dict[str, type | tuple[type, int]] = field(default_factory=dict)
    # the first [world] key whose value the track cannot use, and why (None: all good)
    check_world: Callable[[dict[str, tuple]], tuple[str, str] | None] | None = None
    seams: SeamRules = NO_RULES  # what the replica-side hooks watch for
    # a search for a broken promise: (stage, max_examples, the run axes' settings) -> Search
    find_race: Callable[[Stage, int, tuple], Any] | None = None
    # its canonical scenarios made from other tracks' (given every track's own), if any
    borrow_scenarios: Callable[[list[Scenario]], list[Scenario]] | None = None
    connections_per_replica: int = 1  # PostgreSQL connections one replica of it opens
    # step mode holds before every shared access of its stages: each SQL statement, and each
    # Redis command where its hooks install harness.engine.inside.seam_redis
    steppable: bool = False
    # its replicas may fork from a zygote kept since an earlier run of the process (harness.
    # engine.run.zygote's Kept): its stages open, start and draw nothing at import that a fresh
    # process would have its own of (a socket, a thread, a random id, the clock's time)
    forks_kept: bool = True
    requires: tuple[str, ...] = ()  # modules its stages import beyond racelab's own …
    install_hint: str = ""  # … and how to get them
    # a track whose stages are apps of their own (the project track: a folder with
    # [tool.racelab] in its pyproject.toml, named on the command line, never listed) says
    # their schema's statements and fits a scenario's times to the app's own slots
    claims: Callable[[Path], bool] | None = None
    ddl: Callable[[Stage], list[str]] | None = None
    fit: Callable[[Stage, Scenario], Scenario] | None = None

    def __post_init__(self) -> None:
        REPORT.check(self.report, f"track {self.name!r}")

    @property
    def scenario_dir(self) -> Path:
        return self.home / "scenarios"

    @property
    def step_scenario_dir(self) -> Path:
        """Scenarios for step, explore and `run --schedule` by name, not matrix columns (a
        same-instant start that the matrix's scenarios tell as offsets: the alerts track's)."""
        return self.scenario_dir / "steps"

    def missing(self) -> str:
        """Why its stages cannot run here ("" when they can): the `requires` not installed."""
        if gone := [m for m in self.requires if importlib.util.find_spec(m) is None]:
            return (f"the {self.name} track's stages need {', '.join(gone)}, not installed "
                    f"here: {self.install_hint}")
        return ""

    def stage_id(self, folder: str) -> str:
        """'03' for 03-claim-row on a track at the root; 'alerts-01' for alerts/01-redis-claim."""
        return f"{self.stage_dir}-{folder[:2]}" if self.stage_dir else folder[:2]
