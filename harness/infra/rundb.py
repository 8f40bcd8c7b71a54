"""Run databases, reused within one harness process.

CREATE DATABASE copies a whole template (several MB, written and synced) and DROP DATABASE
removes it again: together a few hundred milliseconds per run, more than the ticks of a
canonical run. So a run that ended cleanly hands its database back, and the next run of a
stage with the same schema takes it wiped (`wipe`: no rows, every sequence back at its start,
the schema kept). A run that failed drops its database; every database
still held is dropped when the process exits. Each database is recorded in the lab's list
(harness.infra.owned) before it is made, so `racelab clean` finds what a SIGKILLed harness
left and nothing else; the name keeps the harness pid for a human listing databases.
"""

from __future__ import annotations

import atexit
import os
import secrets
import threading
from graphlib import CycleError, TopologicalSorter

import psycopg

from harness import interrupts
from harness.errors import UserError
from harness.infra import owned, services

_idle: dict[tuple[str, ...], list[str]] = {}  # schema (its DDL) → emptied databases
_schema_of: dict[str, tuple[str, ...]] = {}  # every database this process holds → its schema
_admin_url: list[str] = []
_lock = threading.Lock()  # a matrix runs cells in several threads
_settled = threading.Condition(_lock)  # a database made or emptied in a thread is done
_busy: list[str] = []  # databases a thread is making or emptying now
_closing: list[bool] = []  # drop_all began: no thread makes or takes one any more
_wipes: dict[str, int] = {}  # database → times it was wiped
VACUUM_EVERY = 50  # wipes of one database between two VACUUMs of its tables


def acquire(admin_url: str, ddl: list[str], keep: bool = False) -> str:
    """An empty database with the schema: an idle one of this process, or a new one.
    A run that keeps its database (--keep) always gets a new one, never handed back."""
    schema = tuple(ddl)
    name = f"{services.DB_PREFIX}{os.getpid()}_{secrets.token_hex(3)}"
    with _lock:
        if _closing:  # the process is cleaning up (an interrupt): a worker thread stops here
            raise KeyboardInterrupt
        reused = _idle[schema].pop() if not keep and _idle.get(schema) else None
        _busy.append(reused or name)
    try:
        if reused is not None:
            _empty(admin_url, reused)
            return reused
        _make(admin_url, name, ddl, keep)
        return name
    finally:
        with _lock:
            _busy.remove(reused or name)
            _settled.notify_all()


def _make(admin_url: str, name: str, ddl: list[str], keep: bool) -> None:
    with interrupts.shielded():  # made and remembered, or neither: never one left unnamed
        if not keep:
            _remember(admin_url, name, tuple(ddl))
        try:
            owned.create(admin_url, name, kept=keep)
        except BaseException:
            with _lock:
                _schema_of.pop(name, None)
            raise
    try:
        with psycopg.connect(services.libpq_url(services.app_url(admin_url, name))) as conn:
            create_schema(conn, ddl)
    except BaseException:
        discard(admin_url, name)
        raise


def create_schema(conn: psycopg.Connection, ddl: list[str]) -> None:
    """Run the schema's statements on `conn`, committed; an error in one (a project's own SQL
    file, say) is one line."""
    for statement in ddl:
        try:
            conn.execute(statement)
        except psycopg.Error as e:
            line = (e.diag.message_primary or str(e)).splitlines()[0]
            raise UserError(f"creating the schema: {line}") from None
    conn.commit()


def release(admin_url: str, name: str) -> None:
    """Keep the database of a run that ended cleanly for the next run of this process; it is
    emptied when taken, so a lone `racelab run` pays only the DROP at exit, as before."""
    schema = _schema_of.get(name)
    if schema is None:
        return
    with _lock:
        _idle.setdefault(schema, []).append(name)


def _empty(admin_url: str, name: str) -> None:
    """No rows, every sequence back at its start, the schema kept."""
    try:
        with psycopg.connect(services.libpq_url(services.app_url(admin_url, name)),
                             autocommit=True) as conn:
            with _lock:
                _wipes[name] = wipes = _wipes.get(name, 0) + 1
            wipe(conn, delete_order(conn), wipes)  # read anew: a run may have made a table
    except BaseException:
        discard(admin_url, name)
        raise


def delete_order(conn: psycopg.Connection) -> list[str] | None:
    """The tables of the database on `conn`, each before the tables its foreign keys point at;
    None (`wipe` then truncates) when the foreign keys make a cycle, or when a DELETE would do
    more than delete: a trigger or rule of the schema's own on DELETE (an audit row written, a
    ledger that refuses deletes), which TRUNCATE does not fire."""
    tables = dict(conn.execute(
        "SELECT c.oid, format('%I.%I', n.nspname, c.relname) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p') "
        "AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
        "AND n.nspname NOT LIKE 'pg_toast%' AND n.nspname NOT LIKE 'pg_temp%'").fetchall())
    if conn.execute(
            "SELECT 1 FROM pg_trigger WHERE NOT tgisinternal AND tgtype & 8 <> 0 "
            "AND tgrelid = ANY(%(t)s) UNION ALL SELECT 1 FROM pg_rewrite "
            "WHERE ev_type = '4' AND ev_class = ANY(%(t)s)",
            {"t": list(tables)}).fetchone() is not None:
        return None
    after: dict[int, set[int]] = {oid: set() for oid in tables}  # a table: those before it
    for child, parent in conn.execute(
            "SELECT conrelid, confrelid FROM pg_constraint WHERE contype = 'f'"):
        if child != parent and child in after and parent in after:
            after[parent].add(child)
    try:
        return [tables[oid] for oid in TopologicalSorter(after).static_order()]
    except CycleError:
        return None


def wipe(conn: psycopg.Connection, tables: list[str] | None, wipes: int) -> None:
    """Empty the database on `conn` (autocommit) for a run, as a new one would start: DELETE
    from `tables` (`delete_order`'s; None: TRUNCATE them all), every sequence set back to its
    start. TRUNCATE gives each table and index new files, and every session after rebuilds what
    it knew of them: about three times the cost of DELETE on a run's few rows. The rows' dead
    versions go at the VACUUM of every `VACUUM_EVERY`th wipe (`wipes`: this one's number)."""
    if tables is None:
        truncate_all(conn)
    elif tables:
        try:
            conn.execute("; ".join(f"DELETE FROM {t}" for t in tables))
        except psycopg.Error:  # all or nothing (one transaction): what DELETE cannot, TRUNCATE
            truncate_all(conn)
            tables = None
    conn.execute("SELECT setval(format('%I.%I', schemaname, sequencename)::regclass, "
                 "start_value, false) FROM pg_sequences "
                 "WHERE schemaname NOT IN ('pg_catalog', 'information_schema')")
    if tables and wipes % VACUUM_EVERY == 0:
        conn.execute(f"VACUUM {', '.join(tables)}")


def truncate_all(conn: psycopg.Connection) -> None:
    """Every table of the database on `conn` emptied, every sequence back at its start."""
    tables = [r[0] for r in conn.execute(
        "SELECT format('%I.%I', schemaname, tablename) FROM pg_tables "
        "WHERE schemaname NOT IN ('pg_catalog', 'information_schema')")]
    if tables:
        conn.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")


def discard(admin_url: str, name: str) -> None:
    """Drop a database whose state is unknown (its run failed or was interrupted); it stays
    remembered (dropped at exit) until the drop is done."""
    with interrupts.shielded():
        owned.drop(admin_url, name)
        with _lock:
            schema = _schema_of.pop(name, None)
            _wipes.pop(name, None)
            if schema is not None and name in _idle.get(schema, []):
                _idle[schema].remove(name)


def held() -> list[str]:
    """The databases this process holds (in use or idle)."""
    return sorted(_schema_of)


def _remember(admin_url: str, name: str, schema: tuple[str, ...]) -> None:
    with _lock:
        _schema_of[name] = schema
    if not _admin_url:
        _admin_url.append(admin_url)
        atexit.register(drop_all)


def closing() -> bool:
    """Whether drop_all began: this process makes and hands out no run database any more."""
    return bool(_closing)


def drop_all() -> list[str]:
    """Drop every database this process holds (at exit, or on an interrupt); the names of
    those the server would not drop. One a thread is making or emptying (an explore's worker,
    a matrix's cell) is waited for, and no thread makes one after this began."""
    left = []
    if os.getpid() != _owner_pid:
        return left
    with _lock:
        _closing.append(True)
        _settled.wait_for(lambda: not _busy, timeout=SETTLE_S)
    if _admin_url:
        interrupts.settle()
        for name in list(_schema_of):
            try:
                discard(_admin_url[0], name)
            except psycopg.Error:
                left.append(name)  # the server went away: `racelab clean` finds it by the pid
    return left


_owner_pid = os.getpid()
SETTLE_S = 60  # the longest a CREATE DATABASE under way is waited for
