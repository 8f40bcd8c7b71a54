"""Which databases racelab made, so `racelab clean` removes those and nothing else.

The lab keeps the list in a database of its own, racelab_registry, one row per database: its
name, the harness's pid, that process's start time (a reused pid is not the owner), the host,
and whether `run --keep` kept it. The row is written before CREATE DATABASE and deleted after
DROP DATABASE, so a harness killed at any moment leaves at worst a row whose database may be
gone, never a database nobody recorded. Each database also gets a COMMENT saying who made it,
for whoever lists them (`\\l+`). A database not in the list is never touched, whatever its name:
a user's racelab_prod stays. `racelab clean --all` drops the list itself once it is empty.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

import psycopg
from psycopg import errors, sql

from harness.errors import UserError
from harness.infra import cleanup, services

REGISTRY = f"{services.DB_PREFIX}registry"
SCHEMA = """CREATE TABLE IF NOT EXISTS made (
    name text PRIMARY KEY, pid integer NOT NULL, started double precision, host text NOT NULL,
    kept boolean NOT NULL DEFAULT false, created timestamptz NOT NULL DEFAULT now())"""
DROP_TRIES, DROP_PAUSE_S = 10, 0.1
_ready: set[str] = set()  # admin URLs whose registry this process has checked
_lock = threading.Lock()


@dataclass(frozen=True)
class Made:
    name: str
    pid: int
    started: float | None
    host: str
    kept: bool

    def owner_gone(self) -> bool:
        """The harness that made it no longer runs (known only on its own host)."""
        return self.host == socket.gethostname() and not cleanup.owner_alive(self.pid,
                                                                             self.started)


def create(admin_url: str, name: str, kept: bool = False) -> None:
    """Record the database, then create it (the record first: see the module's docstring)."""
    me = cleanup.me()
    with _registry(admin_url) as conn:
        conn.execute("INSERT INTO made (name, pid, started, host, kept) VALUES (%s, %s, %s, %s, "
                     "%s)", (name, me["owner"], me["started"], socket.gethostname(), kept))
    try:
        services.create_database(admin_url, name)
        with psycopg.connect(services.libpq_url(admin_url), autocommit=True) as conn:
            conn.execute(sql.SQL("COMMENT ON DATABASE {} IS {}").format(
                sql.Identifier(name), sql.Literal(_note(me["owner"], kept))))
    except errors.DuplicateDatabase:  # someone else's: forget it, never drop it
        forget(admin_url, name)
        raise
    except BaseException:
        drop(admin_url, name)
        raise


def _note(pid: int, kept: bool) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ")
    if kept:
        return f"made by racelab run --keep (pid {pid}, {when}); racelab clean --kept drops it"
    return (f"made by racelab (pid {pid} on {socket.gethostname()}, {when}); racelab clean "
            "drops it once that process is gone")


def drop(admin_url: str, name: str) -> None:
    """Drop a database the lab made, then forget it."""
    services.drop_database(admin_url, name)
    forget(admin_url, name)


def forget(admin_url: str, name: str) -> None:
    """Take a name off the list (its database is gone, or was never the lab's). No list, no
    name to take off: `clean --all` may have dropped it, and forgetting never makes it again."""
    if REGISTRY not in services.list_databases(admin_url):
        return
    try:
        with _registry(admin_url, make=False) as conn:
            conn.execute("DELETE FROM made WHERE name = %s", (name,))
    except psycopg.OperationalError:
        if REGISTRY in services.list_databases(admin_url):
            raise  # the list is there and unreachable: the server is in trouble


def made(admin_url: str) -> list[Made]:
    """Every database the list holds, by name (none when there is no list yet)."""
    if REGISTRY not in services.list_databases(admin_url):
        return []
    with _registry(admin_url) as conn:
        rows = conn.execute("SELECT name, pid, started, host, kept FROM made ORDER BY name")
        return [Made(*row) for row in rows]


def drop_registry_if_empty(admin_url: str) -> bool:
    """Drop the list when it names nothing and nobody uses it; True when dropped."""
    if REGISTRY not in services.list_databases(admin_url) or made(admin_url):
        return False
    for attempt in range(DROP_TRIES):  # a run's connections to the list last milliseconds
        try:
            with psycopg.connect(services.libpq_url(admin_url), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE "{REGISTRY}"')  # no FORCE: a run using it keeps it
            break
        except errors.ObjectInUse:
            if attempt == DROP_TRIES - 1:
                return False
            time.sleep(DROP_PAUSE_S)
        if made(admin_url):
            return False
    with _lock:
        _ready.discard(admin_url)
    return True


@contextmanager
def _registry(admin_url: str, make: bool = True) -> Iterator[psycopg.Connection]:
    """A connection to the list, made first if missing; made again if `clean --all` dropped
    it since this process last looked (unless `make` is False)."""
    with _lock:
        if make and admin_url not in _ready:
            _make_registry(admin_url)
            _ready.add(admin_url)
    url = services.libpq_url(services.app_url(admin_url, REGISTRY))
    try:
        conn = psycopg.connect(url, autocommit=True)
    except psycopg.OperationalError:
        if not make:
            raise
        with _lock:
            _make_registry(admin_url)
        conn = psycopg.connect(url, autocommit=True)
    with conn:
        yield conn


def _make_registry(admin_url: str) -> None:
    with psycopg.connect(services.libpq_url(admin_url), autocommit=True) as conn:
        try:
            conn.execute(f'CREATE DATABASE "{REGISTRY}"')
            conn.execute(f"COMMENT ON DATABASE \"{REGISTRY}\" IS 'racelab''s list of the "
                         "databases it made; racelab clean --all drops it once empty'")
        except errors.DuplicateDatabase:
            pass  # made before, or by another racelab just now
    with psycopg.connect(services.libpq_url(services.app_url(admin_url, REGISTRY))) as conn:
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('racelab registry'))")
        theirs = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', "
            "'information_schema') AND (schemaname, tablename) <> ('public', 'made')"
        ).fetchone()[0]
        if theirs:
            raise UserError(f"the database {REGISTRY} is not racelab's ({theirs} tables of its "
                            "own), and racelab keeps its list of the databases it makes there: "
                            "rename that database or point RACELAB_POSTGRES_URL elsewhere")
        conn.execute(SCHEMA)
        conn.execute("COMMENT ON TABLE made IS 'the databases racelab made; racelab clean "
                     "drops those whose harness is gone'")
