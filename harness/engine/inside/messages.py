"""What the harness and a lab process say to each other over their pipe, one class a message.

harness → process: `Tick` (run the job once), `Release` (go on from a hold), `Stop`; to a
zygote, `Fork` (a new replica, answered with its pid and its end of a pipe).
process → harness: `Ready`, `Held` (about to end a transaction, or to run the statement a
fault's hold names, or in step mode about to run a statement; the ops so far), `Done` (the
tick's outcome, its timeline notes and its remaining ops), `Stalled` (in step mode: the tick
can only wait for a connection of its own pool), `Broken` (an error in the stage's own
files, as FILE:LINE: message).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.engine.inside.access import EVERYTHING, Access
from harness.engine.model.faults import AT_END, HoldAt, SeamCrash


@dataclass(frozen=True)
class Tick:
    now: str  # the process's own clock reading, ISO-8601
    hold: bool  # hold before the end of its transaction until released
    crash: SeamCrash | None = None  # what the seam fault armed in it for this tick raises after
    step: bool = False  # step mode: hold before every statement and every COMMIT/ROLLBACK
    at: HoldAt = AT_END  # where the hold comes, if it holds: a fault's kind may say
    access: bool = False  # in step mode: read what each statement touches, for a chooser that
    # reads it (harness.engine.explore.steps.READS_ACCESS); else each Held says EVERYTHING


@dataclass(frozen=True)
class Release:
    pass


@dataclass(frozen=True)
class Stop:
    pass


@dataclass(frozen=True)
class Fork:
    """To a zygote (harness.engine.run.zygote): start a replica with these environment variables."""

    env: dict[str, str]


@dataclass(frozen=True)
class Ready:
    pid: int


@dataclass(frozen=True)
class Held:
    how: str  # commit, rollback, first statement (held early), a library's call, or step
    ops: list[tuple] = field(default_factory=list)
    next: str = ""  # in step mode: the statement it runs when released, shortened
    frees: bool = False  # in step mode: running it can end another's wait (a COMMIT, …)
    ran_ns: int = 0  # the process's time since its last release: the app's code and SQL, and
    seam_ns: int = 0  # of it, the time in the lab's hooks (the harness's share, in there)
    access: Access = EVERYTHING  # in step mode: what its next step touches


@dataclass(frozen=True)
class Done:
    outcome: str  # ok, failed, unknown (the connection died under it)
    notes: list[tuple[str, str, dict]] = field(default_factory=list)
    ops: list[tuple] = field(default_factory=list)


@dataclass(frozen=True)
class Stalled:
    """In step mode: a checkout of the tick waits for a connection of the process's own pool,
    and nothing else it awaits can end that wait (harness.engine.inside.app_pool)."""


@dataclass(frozen=True)
class Broken:
    line: str


class Refused(BaseException):
    """Raised in a lab process that cannot go on as asked (a project's job connecting to a
    database it was not given): past the app's own error handling, the process tells the
    harness `Broken(line)` and ends; the command stops with that one line."""

    def __init__(self, line: str):
        super().__init__(line)
        self.line = line
