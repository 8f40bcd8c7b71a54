"""A project's verdict: each side effect counted per slot by its own query, read-only, after
the run, against what the description expects of it (exactly, at least or at most once)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

import psycopg

from harness.engine.model.tracks import Totals
from harness.errors import UserError
from harness.tracks.project.description import TABLE, Effect, Job


@dataclass(frozen=True)
class Count:
    """One effect in one slot: how many the query found."""

    slot: datetime
    effect: Effect
    landed: int
    replicas: int  # how many called the job in the slot

    @property
    def expected(self) -> int:
        return self.effect.expected(self.replicas)

    @property
    def duplicates(self) -> int:
        return self.effect.verdict(self.landed, self.replicas)[0]

    @property
    def missed(self) -> int:
        return self.effect.verdict(self.landed, self.replicas)[1]

    def to_json(self) -> dict:
        return {"slot": self.slot.isoformat(), "effect": self.effect.name,
                "expect": self.effect.expect, "expected": self.expected,
                "landed": self.landed, "duplicates": self.duplicates, "missed": self.missed}


@dataclass(frozen=True)
class ProjectVerdict(Totals):
    counts_: tuple[Count, ...]

    def parts(self) -> tuple[Count, ...]:
        return self.counts_

    @property
    def runs(self) -> int:
        """Every effect that landed, over the slots."""
        return sum(c.landed for c in self.counts_)

    @property
    def partial(self) -> int:
        return 0  # a project names no parts of one effect

    def per_effect(self) -> dict[str, list[int]]:
        """Each effect's counts, slot by slot."""
        out: dict[str, list[int]] = {}
        for c in self.counts_:
            out.setdefault(c.effect.name, []).append(c.landed)
        return out

    def to_json(self) -> dict:
        return {**self.counts(), "effects": [c.to_json() for c in self.counts_]}


QUERY_TIMEOUT = "10s"  # an effect query is a count: one that takes longer is a mistake


def check_queries(conn: psycopg.Connection, job: Job) -> None:
    """Each effect's query planned (EXPLAIN) on the run's fresh schema, before any replica
    starts: one PostgreSQL refuses is one line naming its key, not an error after the run."""
    zone = ZoneInfo(job.timezone)
    for effect in job.effects:
        with conn.transaction():
            try:
                conn.execute(f"EXPLAIN {effect.query}", _params(job, job.start, zone))
            except psycopg.Error as e:
                raise UserError(f"{_where(effect)}: {_first(e)}") from None


def _params(job: Job, slot: datetime, zone: ZoneInfo) -> dict:
    """What an effect query is given: its slot's time, and the next slot's (a window)."""
    return {"slot": slot.astimezone(zone), "next_slot": (slot + job.every).astimezone(zone)}


def _where(effect: Effect) -> str:
    return f"[{TABLE}] effects.{effect.name} query"


def _first(e: psycopg.Error) -> str:
    return (e.diag.message_primary or str(e)).splitlines()[0]


def state(conn: psycopg.Connection, job: Job) -> dict:
    """Each effect's count in each slot as it stands (read after each tick that committed):
    the shared state the timeline and the picture show."""
    zone = ZoneInfo(job.timezone)
    with conn.transaction():
        conn.execute("SET TRANSACTION READ ONLY")
        conn.execute("SELECT set_config('TimeZone', %s, true), "
                     "set_config('statement_timeout', %s, true)", (job.timezone, QUERY_TIMEOUT))
        return {e.name: [_one_number(conn, e, _params(job, slot, zone))
                         for slot in job.slot_times()] for e in job.effects}


def check(conn: psycopg.Connection, job: Job, replicas: int) -> ProjectVerdict:
    """Each effect's query for each slot, in one read-only transaction, in the job's zone (a
    query's ::date is the slot's date there); `replicas` call the job in every slot."""
    zone = ZoneInfo(job.timezone)
    found = []
    with conn.transaction():
        conn.execute("SET TRANSACTION READ ONLY")
        conn.execute("SELECT set_config('TimeZone', %s, true), "
                     "set_config('statement_timeout', %s, true)", (job.timezone, QUERY_TIMEOUT))
        for slot in job.slot_times():
            for effect in job.effects:
                found.append(Count(slot.astimezone(zone), effect,
                                   _one_number(conn, effect, _params(job, slot, zone)),
                                   replicas))
    return ProjectVerdict(tuple(found))


def _one_number(conn: psycopg.Connection, effect: Effect, params: dict) -> int:
    try:
        with conn.transaction():  # a savepoint: the error is the query's alone
            rows = conn.execute(effect.query, params).fetchall()
    except psycopg.Error as e:
        raise UserError(f"{_where(effect)}: {_first(e)}") from None
    if len(rows) != 1 or len(rows[0]) != 1 or not isinstance(rows[0][0], int) or isinstance(
            rows[0][0], bool) or rows[0][0] < 0:
        raise UserError(f"{_where(effect)}: gave {rows[:2]!r}, not one row of one whole number "
                        "of at least 0 (a count)")
    return rows[0][0]
