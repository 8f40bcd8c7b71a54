"""Hooks a replica process installs around the stage's database traffic, from outside its code.

They observe (lock results, claims, sentinel checks, rows written, commit or rollback), hold a
transaction before it ends while the runner lines the other replicas up behind it, and inject
the seam faults (a crash right after the first write to a table the track names). What to
watch for comes from the track as `SeamRules`; the hooks themselves know no track.
"""

from __future__ import annotations

import functools
import importlib
import logging
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import event
from sqlalchemy.engine import Engine

_INSERT = re.compile(r"^\s*INSERT\s+INTO\s+\"?(\w+)", re.I)
_UPDATE = re.compile(r"^\s*UPDATE\s+\"?(\w+)", re.I)


@dataclass(frozen=True)
class SeamRules:
    """A track's words for its SQL: a claim, its sentinel check, the writes a crash follows."""

    claim_table: str = ""  # INSERT … RETURNING into it: a claim, won or lost
    sentinel: str = ""  # a regex on a SELECT: the sentinel check, found or absent
    crash_tables: frozenset[str] = frozenset()  # an armed crash raises after a write to one
    loggers: tuple[str, ...] = ("myapp",)  # whose records (INFO and up) join the timeline
    hooks: str = ""  # a module whose install(seams) wraps the app's own decisions, before import


NO_RULES = SeamRules()
_IN_SQL = ("write", "lock", "claim", "sentinel")  # what makes a transaction worth listing


class InjectedCrash(RuntimeError):
    """Raised by an armed seam fault: the job dies after writing one row."""


def _first_value(cursor) -> object:
    """The first column of the first row, without consuming it (SQLAlchemy buffers async rows)."""
    rows = getattr(cursor, "_rows", None)
    if rows:
        return rows[0][0]
    return None


class Seams:
    """Per-process hook state. The runner drives it through `begin` and `end` of each tick."""

    def __init__(self, hold: Callable[[str], None], rules: SeamRules):
        self._hold = hold  # blocks until the runner releases this replica
        self.rules = rules
        self.notes: list[tuple[str, str]] = []
        self.active = False
        self.hold_pending = False
        self.crash_armed = ""  # the name of the armed fault, or ""
        self.writes: Counter[str] = Counter()
        self.committing: int | None = None  # index of a COMMIT note not yet known to succeed
        self.tx_start = 0  # notes before the open transaction: one that adds none goes unlisted
        self.xact_lock = False  # a transaction-level advisory lock is held until the tx ends

    def install(self) -> None:
        event.listen(Engine, "after_cursor_execute", self._after_execute)
        event.listen(Engine, "commit", self._on_commit)
        event.listen(Engine, "rollback", self._on_rollback)
        event.listen(Engine, "begin", self._on_begin)
        handler = _Recorder(self)
        for name in self.rules.loggers:
            logger = logging.getLogger(name)
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
            logger.propagate = False

    def begin(self, hold: bool, crash: str) -> None:
        self.notes = []
        self.writes.clear()
        self.active = True
        self.hold_pending = hold
        self.crash_armed = crash  # armed for this tick or task only; the runner re-arms
        self.committing = None
        self.tx_start = 0
        self.xact_lock = False

    def end(self) -> list[tuple[str, str]]:
        self.active = False
        self.hold_pending = False
        self._flush_writes()
        return self.notes

    def failed(self, error: str) -> None:
        """The tick raised. Raised by a COMMIT nothing followed, it is that commit failing:
        the note says so instead of COMMIT (SQLAlchemy's commit event fires before the commit)."""
        if self.active and self.committing is not None:
            self.notes[self.committing] = ("commit-failed", error)
            self.committing = None
            return
        self.note("error", error)

    def note(self, kind: str, detail: str = "", at: int | None = None) -> None:
        """Note what happened; `at` puts it before what came later (a hook learns late)."""
        if self.active:
            self.notes.insert(len(self.notes) if at is None else at, (kind, detail))

    # -- SQLAlchemy events ----------------------------------------------------------------------

    def _after_execute(self, conn, cursor, statement, parameters, context, executemany) -> None:
        if not self.active:
            return
        self.committing = None  # the connection went on: a COMMIT before this went through
        sql = " ".join(statement.split())
        if "pg_try_advisory" in sql:
            taken = bool(_first_value(cursor))
            self.note("lock", "true" if taken else "false")
            self.xact_lock = self.xact_lock or (taken and "xact" in sql)
            return
        if m := _INSERT.match(sql):
            table = m.group(1).lower()
            if table == self.rules.claim_table and "RETURNING" in sql.upper():
                self.note("claim", "true" if _first_value(cursor) is not None else "false")
                if _first_value(cursor) is None:
                    return
            rows = len(parameters) if executemany and isinstance(parameters, list) else 1
            self.writes[table] += rows
            if self.crash_armed and table in self.rules.crash_tables:
                fault, self.crash_armed = self.crash_armed, ""
                self.note("fault", f"{fault}: raising after INSERT INTO {table}")
                raise InjectedCrash(f"injected crash after INSERT INTO {table}")
            return
        if m := _UPDATE.match(sql):
            if cursor.rowcount and cursor.rowcount > 0:
                self.writes[f"{m.group(1).lower()} (updated)"] += cursor.rowcount
            return
        if self.rules.sentinel and re.search(self.rules.sentinel, sql):
            self.note("sentinel", "found" if _first_value(cursor) is not None else "absent")

    def _flush_writes(self) -> None:
        if self.writes:
            self.notes.append(("write", ", ".join(f"{n} {t}" for t, n in self.writes.items())))
            self.writes.clear()

    def _on_commit(self, conn) -> None:
        self._ending("commit")

    def _on_rollback(self, conn) -> None:
        self._ending("rollback")

    def hold_before(self, point: str) -> None:
        """Hold a tick before its first call of `module.Class.method` as before a COMMIT: for
        a library whose critical section is not a database transaction (a pass under a lock)."""
        module, owner, attr = point.rsplit(".", 2)
        cls = getattr(importlib.import_module(module), owner)
        original = getattr(cls, attr)

        @functools.wraps(original)
        def held(*args, **kwargs):
            if self.active and self.hold_pending:
                self.hold_pending = False
                self.note("held", f"before {owner}.{attr}")
                self._hold(f"call {attr}")
            return original(*args, **kwargs)

        setattr(cls, attr, held)

    def _on_begin(self, conn) -> None:
        self.committing = None
        self.tx_start = len(self.notes)

    def _ending(self, how: str) -> None:
        if not self.active:
            return
        self._flush_writes()
        if self.hold_pending:
            self.hold_pending = False
            self.note("held", f"before {how.upper()}")
            self._hold(how)
        elif not any(kind in _IN_SQL for kind, _ in self.notes[self.tx_start:]):
            return  # a transaction that wrote and decided nothing: not worth a word
        if how == "commit" and self.active:
            self.committing = len(self.notes)
        elif how == "rollback" and self.committing is not None:
            return  # the rollback of a failed commit: the failure says it
        released, self.xact_lock = self.xact_lock, False
        self.note(how, "lock released" if released else "")


# A library's own log line may time itself on the wall clock ("lasted 0.019 s"): on a virtual
# timeline that figure means nothing and would make two runs of one seed differ.
_WALL_SECONDS = re.compile(r"\b\d+\.\d+ ?s\b")


class _Recorder(logging.Handler):
    def __init__(self, seams: Seams):
        super().__init__(logging.INFO)
        self.seams = seams

    def emit(self, record: logging.LogRecord) -> None:
        text = _WALL_SECONDS.sub("(wall-clock time)", record.getMessage())
        self.seams.note("log", f"{record.levelname.lower()}: {text}")
