"""What a seam fault does inside a replica, as the fault itself declares it.

A seam fault (harness.engine.faults, `where = "seam"`) does not act from outside: the harness
arms it in one process for one tick by sending its `SeamCrash` in the Tick message
(harness.engine.messages), and the hooks in that process (harness.engine.seams) raise
`InjectedCrash` right after the first statement that matches it. Which statements match is the
fault's to say (crash-after-first-write: an INSERT into one of the tables its track names), not
a constant of the hooks. A leaf module: the engine, the faults and a replica process all read it.
"""

from __future__ import annotations

from dataclasses import dataclass

VERBS = ("INSERT", "UPDATE")  # the statements a crash can follow


class InjectedCrash(RuntimeError):
    """Raised by an armed seam fault: the job dies right after the statement it follows."""


@dataclass(frozen=True)
class SeamCrash:
    """Raise once, right after the first `after` statement (INSERT or UPDATE) on one of
    `tables`, whatever rows it touched; `fault` names the process its crash op is recorded
    under (the fault's name)."""

    fault: str
    after: str
    tables: frozenset[str]

    def __post_init__(self) -> None:
        if self.after not in VERBS:
            raise ValueError(f"a seam crash follows one of {', '.join(VERBS)}, not {self.after!r}")

    def trips(self, verb: str, table: str) -> bool:
        """Whether a statement `verb` on `table` is the one it raises after."""
        return verb == self.after and table in self.tables

    def statement(self, table: str) -> str:
        """The statement it raised after, in words: 'INSERT INTO t' or 'UPDATE t'."""
        return f"INSERT INTO {table}" if self.after == "INSERT" else f"UPDATE {table}"
