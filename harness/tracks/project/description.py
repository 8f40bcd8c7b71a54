"""A job of the user's own, as its project's `pyproject.toml` describes it under `[tool.racelab]`.

Read by the harness, which never imports the project's code: the job, its schema (when a
SQLAlchemy `Base` or `MetaData`) and its seed run in the lab's own processes. Every key is
checked when the file is read; a wrong one is one line naming it, and exit 2.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from harness.engine.model import limits
from harness.engine.model.scenario import parse_duration
from harness.errors import UserError

FILE = "pyproject.toml"
TABLE = "tool.racelab"
# the first slot when the description names none: a chosen time (a Monday, 09:00 UTC)
DEFAULT_START = "2026-06-01T09:00:00+00:00"
DRIVERS = ("postgresql+psycopg", "postgresql")  # SQLAlchemy with psycopg 3; libpq's own form
# per slot; "once per replica": each replica's call lands one (a counter every call adds to)
EXPECT = ("exactly once", "at least once", "at most once", "once per replica")
MAX_SLOTS = 48
MAX_EFFECTS = 16
KEYS = {"job", "every", "start", "slots", "timezone", "database_env", "driver", "schema",
        "seed", "effects"}
# what the world hands each replica, in its environment (harness.tracks.project.worker reads it)
JOB_ENV = "RACELAB_JOB"  # module:function
DB_ENV = "RACELAB_JOB_DB_ENV"  # the variable the project reads its database's URL from
DRIVER_ENV = "RACELAB_JOB_DRIVER"  # the URL's scheme the project expects
ZONE_ENV = "RACELAB_JOB_TIMEZONE"
_KEPT = {"PATH", "HOME", "PGAPPNAME", "REPLICA", "DB_POOL_SIZE", "LD_LIBRARY_PATH", "TMPDIR"}
_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_READS = re.compile(r"^\s*(SELECT|WITH)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Effect:
    """A side effect counted per slot: a query of one number, with the slot's time as
    `%(slot)s`, and how many of it a slot should have."""

    name: str
    query: str
    expect: str  # one of EXPECT

    def expected(self, replicas: int) -> int:
        return replicas if self.expect == "once per replica" else 1

    def verdict(self, landed: int, replicas: int) -> tuple[int, int]:
        """(duplicates, missed) of a slot where `landed` came of it, with `replicas` calling."""
        want = self.expected(replicas)
        over = max(0, landed - want) if self.expect != "at least once" else 0
        short = max(0, want - landed) if self.expect != "at most once" else 0
        return over, short


@dataclass(frozen=True)
class Job:
    """What `[tool.racelab]` says: the job, its slots, its database and what it leaves."""

    folder: Path
    job: str  # module:function, called with the slot's time in every replica
    every: timedelta
    start: datetime
    slots: int
    timezone: str
    database_env: str
    driver: str
    schema: str  # module:attribute (a SQLAlchemy Base or MetaData), or a .sql file's path
    seed: str  # a .sql file's path, or ""
    effects: tuple[Effect, ...]

    @property
    def end(self) -> datetime:
        return self.start + self.every * self.slots

    def slot_times(self) -> list[datetime]:
        return [self.start + self.every * k for k in range(self.slots)]

    @property
    def schema_file(self) -> Path | None:
        return self.folder / self.schema if self.schema.endswith(".sql") else None


def is_project(folder: Path) -> bool:
    """A folder whose pyproject.toml has a [tool.racelab] table."""
    try:
        return "racelab" in _table_of(folder / FILE).get("tool", {})
    except (OSError, UserError):
        return False


@cache
def read(folder: Path) -> Job:
    """The description in folder/pyproject.toml, checked key by key."""
    path = folder / FILE
    if not path.is_file():
        raise UserError(f"{folder}: no {FILE} (a project describes its job under [{TABLE}])")
    raw = _table_of(path).get("tool", {}).get("racelab")
    where = f"{path} [{TABLE}]"
    if not isinstance(raw, dict):
        raise UserError(f"{path}: no [{TABLE}] table describing the job")
    if unknown := sorted(set(raw) - KEYS):
        raise UserError(f"{where}: unknown key {unknown[0]!r} (the keys: "
                        f"{', '.join(sorted(KEYS))})")
    every = _duration(raw.get("every", "1h"), f"{where} every")
    if every < timedelta(minutes=5):
        raise UserError(f"{where} every: {raw.get('every')!r} is shorter than 5m (a staggered "
                        "start is 2 minutes after the first)")
    return Job(
        folder=folder,
        job=_callable(raw.get("job"), f"{where} job", required=True),
        every=every,
        start=_start(raw.get("start", DEFAULT_START), f"{where} start"),
        slots=_whole(raw.get("slots", 2), f"{where} slots", 1, MAX_SLOTS),
        timezone=_zone(raw.get("timezone", "UTC"), f"{where} timezone"),
        database_env=_env_name(raw.get("database_env", "DATABASE_URL"),
                               f"{where} database_env"),
        driver=_one_of(raw.get("driver", DRIVERS[0]), DRIVERS, f"{where} driver"),
        schema=_schema(folder, raw.get("schema"), f"{where} schema"),
        seed=_sql_file(folder, raw["seed"], f"{where} seed") if "seed" in raw else "",
        effects=_effects(raw.get("effects"), f"{where} effects"),
    )


def _table_of(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: not TOML ({e})") from None


def _callable(value: object, where: str, required: bool = False) -> str:
    if value is None and required:
        raise UserError(f"{where}: missing (the job as module:function, e.g. "
                        "'myjobs.digest:send')")
    if not isinstance(value, str) or not _CALLABLE.match(value):
        raise UserError(f"{where}: {value!r} is not module:function (e.g. "
                        "'myjobs.digest:send')")
    return value


def _duration(value: object, where: str) -> timedelta:
    try:
        d = parse_duration(value) if isinstance(value, str) else None
    except ValueError:
        d = None
    if d is None or d <= timedelta(0):
        raise UserError(f"{where}: {value!r} is not a duration such as '15m', '1h' or '1d'")
    return d


def _start(value: object, where: str) -> datetime:
    try:
        t = datetime.fromisoformat(value) if isinstance(value, str) else value
        if not isinstance(t, datetime) or t.tzinfo is None:
            raise ValueError
        return limits.year(t, value)
    except ValueError:
        raise UserError(f"{where}: {value!r} is not a time with its UTC offset, e.g. "
                        f"'{DEFAULT_START}'") from None


def _whole(value: object, where: str, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise UserError(f"{where}: {value!r} is not a whole number from {low} to {high}")
    return value


def _zone(value: object, where: str) -> str:
    """An IANA zone both Python and PostgreSQL know (not the leap-second `right/` ones)."""
    try:
        if not isinstance(value, str) or value.startswith(("right/", "posix/")):
            raise ValueError
        ZoneInfo(value)
    except (ValueError, ZoneInfoNotFoundError):
        raise UserError(f"{where}: {value!r} is not a time zone, e.g. 'Europe/Berlin'") from None
    return value


def _env_name(value: object, where: str) -> str:
    if not isinstance(value, str) or not _ENV_NAME.match(value):
        raise UserError(f"{where}: {value!r} is not an environment variable's name")
    if value.upper() in _KEPT or value.upper().startswith(("RACELAB_", "PYTHON")):
        raise UserError(f"{where}: {value!r} is a variable the lab or Python needs; name the "
                        "one your code reads its database URL from")
    return value


def _one_of(value: object, allowed: tuple[str, ...], where: str) -> str:
    if value not in allowed:
        raise UserError(f"{where}: {value!r} is not one of {', '.join(map(repr, allowed))}")
    return value


def _schema(folder: Path, value: object, where: str) -> str:
    if value is None:
        raise UserError(f"{where}: missing (a SQLAlchemy Base or MetaData as module:name, or "
                        "a .sql file)")
    if isinstance(value, str) and value.endswith(".sql"):
        return _sql_file(folder, value, where)
    if not isinstance(value, str) or not _CALLABLE.match(value):
        raise UserError(f"{where}: {value!r} is neither module:name (a SQLAlchemy Base or "
                        "MetaData) nor a .sql file")
    return value


def _sql_file(folder: Path, value: object, where: str) -> str:
    if not isinstance(value, str) or not value.endswith(".sql"):
        raise UserError(f"{where}: {value!r} is not a .sql file in the project")
    path = (folder / value).resolve()
    if not path.is_relative_to(folder.resolve()) or not path.is_file():
        raise UserError(f"{where}: {value!r} is not a file inside {folder}")
    return value


def _effects(value: object, where: str) -> tuple[Effect, ...]:
    if not isinstance(value, dict) or not value:
        raise UserError(f"{where}: missing (a table per side effect, e.g. [{TABLE}.effects."
                        "digests] with query and expect)")
    if len(value) > MAX_EFFECTS:
        raise UserError(f"{where}: {len(value)} effects; at most {MAX_EFFECTS}")
    found = []
    for name, spec in value.items():
        at = f"{where}.{name}"
        if not isinstance(spec, dict) or set(spec) - {"query", "expect"}:
            raise UserError(f"{at}: a table of query and expect")
        query = spec.get("query")
        if not isinstance(query, str) or not _READS.match(query) or ";" in query.rstrip(
                "; \n\t")[:-1]:
            raise UserError(f"{at} query: {query!r} is not one SELECT (it counts the effect "
                            "for the slot given as %(slot)s)")
        found.append(Effect(name, query.strip().rstrip(";"),
                            _one_of(spec.get("expect", EXPECT[0]), EXPECT, f"{at} expect")))
    return tuple(found)
