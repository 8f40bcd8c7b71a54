"""Hooks a replica process installs around the stage's database traffic, from outside its code.

They observe (lock results, claims, sentinel checks, rows written, commit or rollback), hold a
transaction before it ends while the runner lines the other replicas up behind it, and raise
the seam fault armed in the process right after the statement it declares (its `SeamCrash`,
harness.engine.model.faults). What to watch for comes from the track as `SeamRules`; the hooks
themselves know no track and no fault.
"""

from __future__ import annotations

import functools
import importlib
import logging
import re
from collections import Counter
from collections.abc import Callable
from typing import Protocol

from sqlalchemy import event
from sqlalchemy.engine import Engine, default

from harness.engine.inside import told
from harness.engine.inside.access import ENDS, EVERYTHING, Access, of_statement
from harness.engine.inside.app_pool import run_database_only
from harness.engine.inside.hook_clock import HookClock
from harness.engine.model.faults import AT_END, HoldAt, InjectedCrash, SeamCrash
from harness.engine.model.history import ABORTS, F, Type, stamp
from harness.engine.model.tracks import SeamRules

_INSERT = re.compile(r"^\s*INSERT\s+INTO\s+\"?(\w+)", re.I)
_UPDATE = re.compile(r"^\s*UPDATE\s+\"?(\w+)", re.I)
# statements that can free a lock another session waits for, besides COMMIT and ROLLBACK
_FREES = re.compile(r"^\s*(ROLLBACK\s+TO|RELEASE|SELECT\s+pg_advisory_unlock)", re.I)
# statements after which a session differs from a new one even once DISCARD ALL has reset it,
# or is no longer named as the lab named it: a setting of its own (my.thing) stays defined, as
# '' where a new session has none; a library LOADed stays loaded; RESET ALL or DISCARD puts its
# name back to the zygote's; a DO block or EXECUTE may do any of it. Anywhere in a statement,
# comments included: a false match only costs the next replica a new connection
# (harness.engine.inside.app_pool.Handover). A function that sets one is not seen.
_DEFINES = re.compile(r"\bset_config\s*\(|\bSET\s+(?:SESSION\s+|LOCAL\s+)?\"?[^\s\".=;]+\"?\s*\.|"
                      r"\b(?:LOAD|RESET|DISCARD|EXECUTE)\b|^\s*DO\b", re.I | re.M)
_NAMED = re.compile(r"%\((\w+)\)s")  # a named parameter, as psycopg writes it
_SELECT_FROM = re.compile(r"(SELECT) .+? (FROM .*)", re.I)


_IN_SQL = ("write", "lock", "claim", "sentinel")  # what makes a transaction worth listing
# notes that are ops of their own (a lone `info`); the SQL steps are ops as they run instead
_NOTE_OPS = {"log": F.LOG, "output": F.OUTPUT, "exit": F.EXIT, "error": F.ERROR}


class Seams:
    """Per-process hook state. The runner drives it through `begin` and `end` of each tick."""

    def __init__(self, hold: Callable[[str, list[tuple], str], None], rules: SeamRules):
        self._held = hold  # blocks until the runner releases it; gets the ops so far, the next
        # statement and the time spent in these hooks since the last release
        self.clock = HookClock()  # the time spent in these hooks, the lab's, not the app's
        self.rules = rules
        self.sentinel = re.compile(rules.sentinel) if rules.sentinel else None
        self.notes: list[tuple[str, str, dict]] = []  # (kind, words, data) for the timeline
        self.ops: list[tuple] = []  # (stamp, type, f, value[, process]) in the order they ran
        self.pending: tuple[F, dict] | None = None  # the statement running: invoked, not done
        self.statement = ""  # the statement running, as sent
        self.refused: str | None = None  # the SQLSTATE a statement of the tick was aborted with
        self.commit_error: BaseException | None = None  # the COMMIT's error, noted as refused
        self.txn_open = self.commit_open = False
        self.active = False
        self.hold_pending = False
        self.crash_armed: SeamCrash | None = None  # what the fault armed in it raises after
        self.writes: Counter[tuple[str, bool]] = Counter()  # (table, updated): rows
        self.committing: int | None = None  # index of a COMMIT note not yet known to succeed
        self.tx_start = 0  # notes before the open transaction: one that adds none goes unlisted
        self.xact_lock = False  # a transaction-level advisory lock is held until the tx ends
        self.defines_settings = False  # a statement defined a setting of its own (`_DEFINES`)
        self.reads_access = False  # step mode: what each statement touches is read and sent
        self.stepping = False  # step mode: hold before every statement and every COMMIT/ROLLBACK
        self.hold_at = AT_END  # where the tick's hold comes (a fault's kind may say)

    def install(self) -> None:
        event.listen(Engine, "before_cursor_execute", self.clock.timed(self._before_execute))
        event.listen(Engine, "after_cursor_execute", self.clock.timed(self._after_execute))
        event.listen(Engine, "handle_error", self.clock.timed(self._on_error))
        event.listen(Engine, "commit", self.clock.timed(run_database_only(self._on_commit)))
        event.listen(Engine, "rollback", self.clock.timed(run_database_only(self._on_rollback)))
        event.listen(Engine, "begin", self.clock.timed(run_database_only(self._on_begin)))
        commit = default.DefaultDialect.do_commit  # the `commit` event fires before COMMIT
        committed = self.clock.timed(self._committed)
        refused = self.clock.timed(self._commit_refused)

        def do_commit(dialect, dbapi_connection) -> None:
            try:
                commit(dialect, dbapi_connection)
            except Exception as e:
                refused(e)  # PostgreSQL's abort is noted even if the stage retries
                raise
            committed()  # it went through: its op ends here, before anything after it

        default.DefaultDialect.do_commit = do_commit
        install_log(self, self.rules.loggers)

    def _hold(self, how: str, ops: list[tuple], next_: str, frees: bool = False,
              access: Access = EVERYTHING) -> None:
        self.clock.hold(self._held, how, ops, next_, frees, access)

    def _hold_once(self, how: str, before: str, words: str) -> None:
        """The tick's one hold (before COMMIT, its first statement, a call), noted and an op."""
        self.hold_pending = False
        self.note("held", f"before {words}")
        self.op(Type.INVOKE, F.HOLD, {"before": before})
        self._hold(how, self.take_ops(), "")
        self.op(Type.OK, F.HOLD, {"before": before})

    def begin(self, hold: bool, crash: SeamCrash | None, step: bool = False,
              at: HoldAt = AT_END, access: bool = False) -> None:
        self.stepping, self.hold_at, self.reads_access = step, at, access
        self.notes = []
        self.writes.clear()
        self.active = True
        self.hold_pending = hold
        self.crash_armed = crash  # armed for this tick or task only; the runner re-arms
        self.committing = None
        self.tx_start = 0
        self.xact_lock = False
        self.ops = []
        self.pending = None
        self.refused = self.commit_error = None
        self.txn_open = self.commit_open = False

    def end(self) -> list[tuple[str, str, dict]]:
        self._committed()
        self.active = False
        self.hold_pending = False
        self._flush_writes()
        return self.notes

    def step(self, next_: str, frees: bool = False, access: Access = EVERYTHING) -> None:
        """In step mode, hold before the next shared access (a statement, a Redis command:
        harness.engine.inside.seam_redis), shown as `next_`, until the runner lets it run; `frees`:
        running it can end another session's wait for a lock; `access`: what it touches."""
        if self.active and self.stepping:
            self._hold("step", self.take_ops(), next_, frees, access)

    def take_ops(self) -> list[tuple]:
        ops, self.ops = self.ops, []
        return ops

    def op(self, type_: Type, f: F, value: dict | None = None, process: str = "") -> None:
        """Record one op as it happens; `process` names another one (a fault's, in here)."""
        if self.active:
            self.ops.append((stamp(), type_.value, f.value, value or {},
                             *([process] if process else [])))

    def failed(self, error: str, kind: str, unknown: bool = False,
               sqlstate: str | None = None, message: str = "", where: str = "") -> None:
        """The tick raised `error` (in words; `kind`, the exception's class name, is the note's
        data). Raised by a COMMIT nothing followed, it is that commit failing: the note says so
        instead of COMMIT (SQLAlchemy's commit event fires before the commit). `unknown`: the
        connection died, so whether that COMMIT landed nobody knows. An error PostgreSQL
        aborts a transaction with (its `sqlstate` in ABORTS; `message`, the server's words) is
        worded as that: the COMMIT or statement refused, the transaction not retried. `where`:
        the app's own FILE:LINE the error passed through last ('' if none)."""
        data = {"error": kind, **({"sqlstate": sqlstate} if sqlstate else {}),
                **({"where": where} if where else {})}
        aborted = sqlstate in ABORTS
        if self.active and self.commit_open:
            self.commit_open = False
            end = Type.INFO if unknown else Type.FAIL
            self.op(end, F.COMMIT, {"error": error, **data})
            self._txn_ends(end)
        if self.active and self.committing is not None:
            self.notes[self.committing] = ("commit-failed", error, data)
            self.committing = None
            return
        if aborted and self.refused == sqlstate:  # its COMMIT's or statement's note said it
            self.note("error", f"the transaction was aborted ({sqlstate}), not retried",
                      data=data)
            return
        self.note("error", error, data=data)

    def _commit_refused(self, error: BaseException) -> None:
        """A COMMIT raised: one PostgreSQL refused because of another transaction (a SQLSTATE
        in ABORTS) fails its op and is noted as refused, whether the stage then retries the
        transaction or raises (`failed`); any other error is left to `failed`."""
        sqlstate = getattr(error, "sqlstate", None)
        if not self.active or sqlstate not in ABORTS or not self.commit_open:
            return
        self.commit_open = False
        self.commit_error = error
        self.op(Type.FAIL, F.COMMIT, {"error": type(error).__name__, "sqlstate": sqlstate})
        self._txn_ends(Type.FAIL)
        self.refused = sqlstate
        words = (f"COMMIT refused: {told.first_line(error) or ABORTS[sqlstate]} ({sqlstate})",
                 {"error": type(error).__name__, "sqlstate": sqlstate})
        if self.committing is not None:
            self.notes[self.committing] = ("refused", *words)
            self.committing = None
        else:
            self.note("refused", words[0], data=words[1])

    def _committed(self) -> None:
        """A COMMIT the connection went on after (or the tick ended after) went through."""
        if self.commit_open:
            self.commit_open = False
            self.op(Type.OK, F.COMMIT)
            self._txn_ends(Type.OK)

    def _txn_ends(self, how: Type) -> None:
        if self.txn_open:
            self.txn_open = False
            self.op(how, F.TXN)

    def note(self, kind: str, detail: str = "", at: int | None = None,
             data: dict | None = None) -> None:
        """Note what happened; `at` puts it before what came later (a hook learns late)."""
        if self.active:
            self.notes.insert(len(self.notes) if at is None else at, (kind, detail, data or {}))
            if kind in _NOTE_OPS:
                code = (data or {}).get("sqlstate")
                self.op(Type.INFO, _NOTE_OPS[kind], {"text": detail,
                                                     **({"sqlstate": code} if code else {})})

    # -- SQLAlchemy events ----------------------------------------------------------------------

    def _step(self, sql: str) -> tuple[F, dict] | None:
        """What a statement is, as an op: a lock, a claim, a write, the sentinel, or nothing."""
        if "pg_try_advisory" in sql:
            return F.LOCK, {"xact": "xact" in sql}
        if m := _INSERT.match(sql):
            table = m.group(1).lower()
            if table == self.rules.claim_table and "RETURNING" in sql.upper():
                return F.CLAIM, {"table": table}
            return F.WRITE, {"table": table, "updated": False}
        if m := _UPDATE.match(sql):
            return F.WRITE, {"table": m.group(1).lower(), "updated": True}
        if self.sentinel and self.sentinel.search(sql):
            return F.SENTINEL, {}
        return None

    def _before_execute(self, conn, cursor, statement, parameters, context, executemany) -> None:
        if _DEFINES.search(statement):
            self.defines_settings = True
        if not self.active:
            return
        self.statement = statement
        self._committed()
        step = self._step(" ".join(statement.split()))
        if self.hold_pending and self.hold_at.early and self.txn_open:  # before it checks anything
            self._hold_once("first statement", shortened(statement), "its first statement")
        elif self.hold_pending and step and step[0] in (F.WRITE, F.CLAIM) and self.hold_at.trips(
                "UPDATE" if step[1].get("updated") else "INSERT", step[1]["table"]):
            self._hold_once("statement", self.hold_at.words(), self.hold_at.words())
        if self.active and self.stepping:
            self.step(shortened(statement), bool(_FREES.match(statement)),
                      of_statement(statement, parameters) if self.reads_access else EVERYTHING)
        self.pending = step
        if self.pending:
            self.op(Type.INVOKE, *self.pending)

    def _on_error(self, context) -> None:
        """A statement raised: its op fails; one PostgreSQL refused because of another
        transaction (a SQLSTATE in ABORTS) is noted as refused, with the server's words."""
        error = context.original_exception
        if error is self.commit_error:  # SQLAlchemy's event for a COMMIT: noted already
            return
        sqlstate = getattr(error, "sqlstate", None)
        aborted = {"sqlstate": sqlstate} if sqlstate in ABORTS else {}
        if self.active and self.pending:
            f, value = self.pending
            self.pending = None
            self.op(Type.FAIL, f, {**value, "error": type(error).__name__, **aborted})
        if self.active and aborted:
            self._flush_writes()  # they came before it
            self.refused = sqlstate
            self.note("refused", f"{shortened(self.statement, 48)} refused: "
                      f"{told.first_line(error) or ABORTS[sqlstate]} ({sqlstate})",
                      data={"error": type(error).__name__, **aborted})

    def _done(self, value: dict) -> None:
        """The running statement's completion op, with what it returned."""
        if self.pending:
            f, invoked = self.pending
            self.pending = None
            self.op(Type.OK, f, {**invoked, **value})

    def _after_execute(self, conn, cursor, statement, parameters, context, executemany) -> None:
        if not self.active:
            return
        self._committed()
        self.committing = None  # the connection went on: a COMMIT before this went through
        sql = " ".join(statement.split())
        if "pg_try_advisory" in sql:
            taken = bool(first_value(cursor))
            self._done({"result": taken})
            self.note("lock", "true" if taken else "false")
            self.xact_lock = self.xact_lock or (taken and "xact" in sql)
            return
        if m := _INSERT.match(sql):
            table = m.group(1).lower()
            if table == self.rules.claim_table and "RETURNING" in sql.upper():
                won = first_value(cursor) is not None
                self._done({"result": won, "rows": int(won)})
                self.note("claim", "true" if won else "false")
                if not won:
                    return
            rows = len(parameters) if executemany and isinstance(parameters, list) else 1
            self._done({"rows": rows})
            self.writes[(table, False)] += rows
            self._crash_after("INSERT", table)
            return
        if m := _UPDATE.match(sql):
            rows = max(cursor.rowcount or 0, 0)
            self._done({"rows": rows})
            if rows:
                self.writes[(m.group(1).lower(), True)] += rows
            self._crash_after("UPDATE", m.group(1).lower())
            return
        if self.sentinel and self.sentinel.search(sql):
            found = first_value(cursor) is not None
            self._done({"result": found})
            self.note("sentinel", "found" if found else "absent")

    def _crash_after(self, verb: str, table: str) -> None:
        """Raise the armed seam fault if this statement is the one it declared; once."""
        crash = self.crash_armed
        if crash is None or not crash.trips(verb, table):
            return
        self.crash_armed = None
        self.note("fault", f"{crash.fault}: raising after {crash.statement(table)}")
        value = {"after": verb, "table": table}
        self.op(Type.INVOKE, F.CRASH, value, process=crash.fault)
        self.op(Type.OK, F.CRASH, value, process=crash.fault)
        raise InjectedCrash(f"injected crash after {crash.statement(table)}")

    def _flush_writes(self) -> None:
        if self.writes:
            rows = [{"table": t, "rows": n, "updated": up} for (t, up), n in self.writes.items()]
            words = ", ".join(f"{n} {t}{' (updated)' if up else ''}"
                              for (t, up), n in self.writes.items())
            self.notes.append(("write", words, {"writes": rows}))
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
            if self.active and self.hold_pending and self.hold_at.calls:
                self._hold_once(f"call {attr}", f"{owner}.{attr}", f"{owner}.{attr}")
            return original(*args, **kwargs)

        setattr(cls, attr, held)

    def _on_begin(self, conn) -> None:
        self._committed()
        self.committing = None
        self.tx_start = len(self.notes)
        if self.active:
            self.txn_open = True
            self.op(Type.INVOKE, F.TXN)

    def _ending(self, how: str) -> None:
        if not self.active:
            return
        self._flush_writes()
        held = self.hold_pending and self.hold_at.at_end()
        if held:
            self._hold_once(how, how.upper(), how.upper())
        elif self.stepping:
            self._hold("step", self.take_ops(), how.upper(), True, ENDS)
        self._ending_ops(how)
        if not held and not any(kind in _IN_SQL for kind, *_ in self.notes[self.tx_start:]):
            return  # a transaction that wrote and decided nothing: not worth a word
        if how == "commit" and self.active:
            self.committing = len(self.notes)
        elif how == "rollback" and self.committing is not None:
            return  # the rollback of a failed commit: the failure says it
        released, self.xact_lock = self.xact_lock, False
        self.note(how, "lock released" if released else "")

    def _ending_ops(self, how: str) -> None:
        """COMMIT's op is invoked here and completed once the connection goes on (see
        `_committed`, `failed`); a ROLLBACK right after it is that COMMIT failing."""
        if how == "commit":
            self.commit_open = True
            self.op(Type.INVOKE, F.COMMIT)
        elif not self.commit_open:
            self.op(Type.INVOKE, F.ROLLBACK)
            self.op(Type.OK, F.ROLLBACK)
            self._txn_ends(Type.FAIL)


# -- what the seams read off a statement: its words for a person choosing who moves next, and
# the first value it returned ------------------------------------------------------------------

def shortened(sql: str, width: int = 72) -> str:
    """A statement on one line for a person choosing who moves next: parameters by name, a
    long column list elided."""
    text = _NAMED.sub(r":\1", " ".join(sql.split()))
    if len(text) > width and (m := _SELECT_FROM.match(text)):
        text = f"{m.group(1)} … {m.group(2)}"
    return text if len(text) <= width else text[:width - 1] + "…"


def first_value(cursor) -> object:
    """The first column of the first row, without consuming it (SQLAlchemy buffers async rows)."""
    rows = getattr(cursor, "_rows", None)
    if rows:
        return rows[0][0]
    return None


# -- the app's own log records (INFO and up, of the loggers a track names) as timeline notes ---

class Noting(Protocol):
    def note(self, kind: str, detail: str = "") -> None: ...


# A library's own log line may time itself on the wall clock ("lasted 0.019 s"): on a virtual
# timeline that figure means nothing and would make two runs of one seed differ.
_WALL_SECONDS = re.compile(r"\b\d+\.\d+ ?s\b")


class LogRecorder(logging.Handler):
    def __init__(self, seams: Noting):
        super().__init__(logging.INFO)
        self.seams = seams

    def emit(self, record: logging.LogRecord) -> None:
        text = _WALL_SECONDS.sub("(wall-clock time)", record.getMessage())
        self.seams.note("log", f"{record.levelname.lower()}: {text}")


def install_log(seams: Noting, loggers: tuple[str, ...]) -> None:
    handler = LogRecorder(seams)
    for name in loggers:
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
