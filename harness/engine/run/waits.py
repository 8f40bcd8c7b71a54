"""Who waits for whom inside PostgreSQL: a lab process's session blocked on another's lock
(a row, an advisory lock, a transaction it must see end), read from pg_stat_activity."""

from __future__ import annotations

import psycopg


def waiting(conn: psycopg.Connection, dbname: str, app_name: str) -> bool:
    """Whether the session named `app_name` waits on a lock now."""
    row = conn.execute(
        "SELECT 1 FROM pg_stat_activity WHERE datname = %s AND application_name = %s "
        "AND wait_event_type = 'Lock'", (dbname, app_name)).fetchone()
    return row is not None


def blocking(conn: psycopg.Connection, dbname: str, app_names: list[str]
             ) -> dict[str, tuple[str, list[str]]]:
    """Of the sessions named `app_names`, each that waits on a lock: what it waits on (the wait
    event: `tuple`, `transactionid`, `advisory`, …) and the processes holding it, by their lab
    names, all in one query, read from the lock table itself (pg_blocking_pids: a lock granted
    by the holder's COMMIT shows at once, before the waiter wakes)."""
    rows = conn.execute(
        "SELECT a.application_name, coalesce(a.wait_event, ''), b.application_name "
        "FROM pg_stat_activity a JOIN pg_stat_activity b ON b.pid = ANY(pg_blocking_pids(a.pid)) "
        "WHERE a.datname = %s AND a.application_name = ANY(%s) ORDER BY 1, 3",
        (dbname, app_names)).fetchall()
    found: dict[str, tuple[str, list[str]]] = {}
    for waiter, event, holder in rows:
        found.setdefault(waiter, (event, []))[1].append(_lab_name(holder))
    return found


# what a session waits on, by pg_stat_activity's wait event, in a person's words
_WAITED = {"advisory": "an advisory lock {holders} holds",
           "transactionid": "{holders}'s open transaction to end (a row it wrote or locked)",
           "tuple": "a row {holders} holds",
           "relation": "a table {holders} holds locked"}


def words(event: str, holders: list[str]) -> str:
    """'waits for an advisory lock A holds', 'waits for C's open transaction to end (a row it
    wrote or locked)': what the wait is on, and whose, never a lock a stage does not take."""
    who = " and ".join(f"replica {h}" if len(h) == 1 else h for h in holders) or \
        "another session"
    return "waits for " + _WAITED.get(event, f"a lock ({event or 'unknown'}) {{holders}} holds"
                                      ).format(holders=who)


def _lab_name(app_name: str | None) -> str:
    if app_name and app_name.startswith("racelab:"):
        return app_name.rsplit(":", 1)[-1]
    return app_name or "another session"


def sessions(conn: psycopg.Connection, dbname: str, app_name: str) -> list[tuple[str, str]]:
    """Each session of the process named `app_name`: its state (`active`, `idle in
    transaction`, …) and what it waits on (`Lock:transactionid`, `Timeout:PgSleep`, or '')."""
    rows = conn.execute(
        "SELECT coalesce(state, ''), coalesce(wait_event_type || ':' || wait_event, '') "
        "FROM pg_stat_activity WHERE datname = %s AND application_name = %s ORDER BY 1, 2",
        (dbname, app_name)).fetchall()
    return [(state, event) for state, event in rows]


def backends(conn: psycopg.Connection, dbname: str, app_names: list[str]) -> dict[str, list[int]]:
    """The server processes of the sessions named `app_names`."""
    rows = conn.execute("SELECT application_name, pid FROM pg_stat_activity WHERE datname = %s "
                        "AND application_name = ANY(%s)", (dbname, app_names)).fetchall()
    found: dict[str, list[int]] = {}
    for name, pid in rows:
        found.setdefault(name, []).append(pid)
    return found
