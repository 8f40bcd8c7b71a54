"""What the harness and a lab process say to each other over their pipe, one class a message.

harness → process: `Tick` (run the job once), `Release` (go on from a hold), `Stop`.
process → harness: `Ready`, `Held` (about to end a transaction; the ops so far), `Done` (the
tick's outcome, its timeline notes and its remaining ops), `Broken` (an error in the stage's own
files, as FILE:LINE: message).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Tick:
    now: str  # the process's own clock reading, ISO-8601
    hold: bool  # hold before the end of its transaction until released
    crash: str = ""  # the name of the seam fault armed in it for this tick, or ""


@dataclass(frozen=True)
class Release:
    pass


@dataclass(frozen=True)
class Stop:
    pass


@dataclass(frozen=True)
class Ready:
    pid: int


@dataclass(frozen=True)
class Held:
    how: str  # commit, rollback, or the call a library's critical section makes
    ops: list[tuple] = field(default_factory=list)


@dataclass(frozen=True)
class Done:
    outcome: str  # ok, failed, unknown (the connection died under it)
    notes: list[tuple[str, str, dict]] = field(default_factory=list)
    ops: list[tuple] = field(default_factory=list)


@dataclass(frozen=True)
class Broken:
    line: str
