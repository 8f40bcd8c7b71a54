"""The world a cron-track run starts from, and what a correct system would do in it.

The seed decides the members' weekly activity; from the same data this module computes, on
its own, which slots fall in the run and who must be paid, so the checker never has to trust
the stage's arithmetic. The scenario's data faults (harness.tracks.cron.data_faults) then change
the seeded rows, each by its own `change`.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

import psycopg

from harness.engine.model.faults import kind_of, of_where
from harness.engine.model.scenario import Scenario
from harness.tracks.cron import schedule
from harness.tracks.cron.schedule import DEFAULT, Close

JOB = "leaderboard_close"
MEMBERS = 8
TOP_N = 3
BONUS_COINS = 10


@dataclass(frozen=True)
class Slot:
    job: str
    key: str  # ISO year-week of the scheduled time, e.g. 2026-W22
    at: datetime  # when it falls due (harness.tracks.cron.schedule), in the lab's zone
    winners: tuple[int, ...]  # user ids of the week's top 3, best first

    @property
    def title(self) -> str:
        monday = self.at.date() - timedelta(days=self.at.weekday())
        return f"Top 3 of the week of {monday:%Y-%m-%d}"

    @property
    def reason(self) -> str:
        return f"{self.job} {self.key}"


def week_key(at: date) -> str:
    year, week, _ = at.isocalendar()
    return f"{year}-W{week:02d}"


@dataclass(frozen=True)
class Expectation:
    slots: tuple[Slot, ...]
    members: dict[int, str]
    start: datetime  # the run's window: a slot due outside it was paid early or late
    end: datetime
    close: Close = DEFAULT  # when a week's slot falls due

    @property
    def coins_expected(self) -> int:
        return sum(len(s.winners) for s in self.slots) * BONUS_COINS


def seed(conn: psycopg.Connection, s: Scenario) -> Expectation:
    """Fill the run's fresh database; return the expectation the checker holds the run to.
    Its statements go to the server in one round trip (a pipeline), and the members' activity
    is computed once per seed and window (an exploration seeds the same world every run)."""
    long_ago = s.start - timedelta(days=400)
    members = {100 + i: f"member{i:02d}" for i in range(1, MEMBERS + 1)}
    close = schedule.of(s)
    slots, activity = _planned(s.seed, s.start, s.end, tuple(members), close)
    with conn.pipeline(), conn.cursor() as cur:
        cur.execute("INSERT INTO users (id, username, is_bot, joined_at) "
                    "VALUES (1, 'racelab-bot', true, %s)", (long_ago,))
        cur.executemany("INSERT INTO users (id, username, is_bot, joined_at) "
                        "VALUES (%s, %s, false, %s)",
                        [(uid, name, long_ago) for uid, name in members.items()])
        sections = [("general", "General"), ("off-topic", "Off topic")]
        cur.executemany("INSERT INTO sections (slug, name) VALUES (%s, %s)", sections)
        cur.execute(
            "INSERT INTO threads (section_id, author_id, title, body, created_at, "
            "last_activity_at, closed) SELECT id, 101, 'Anyone still here?', '', %s, %s, false "
            "FROM sections WHERE slug = 'off-topic'",
            (long_ago, s.start - timedelta(days=60)),
        )
        cur.execute(  # one statement, typed as the INSERT per row it replaces (most of a seed)
            "INSERT INTO activity (user_id, points, occurred_at) SELECT u, p, t FROM unnest("
            "%s::bigint[], %s::bigint[], %s::timestamptz[]) WITH ORDINALITY AS a(u, p, t, n) "
            "ORDER BY n", activity)
        for f in of_where(s.faults, "data"):  # each changes the seeded rows its own way
            kind_of(f).change(cur, f, s)
    conn.commit()
    return Expectation(slots, members, s.start, s.end, close)


@functools.lru_cache(maxsize=16)
def _planned(seed: int, start: datetime, end: datetime, users: tuple[int, ...],
             close: Close = DEFAULT) -> tuple[tuple[Slot, ...], tuple[str, str, str]]:
    """The slots in [start, end) with their winners, and the activity rows of every week around
    them as three array literals (user, points, time), drawn from `seed`."""
    rng = random.Random(seed)
    slots, activity = [], []
    for at in close.closes(start - timedelta(days=7), end + timedelta(days=7)):
        local = at.astimezone(close.zone)  # the app's week: its key and its Monday
        totals, rows = _seed_week(rng, local, list(users))
        activity += rows
        ranked = sorted(totals, key=lambda uid: (-totals[uid], uid))[:TOP_N]
        if start <= at < end:
            slots.append(Slot(JOB, week_key(local), at, tuple(ranked)))
    columns = zip(*activity, strict=True) if activity else ((), (), ())
    literals = tuple("{" + ",".join(f'"{v.isoformat()}"' if isinstance(v, datetime) else str(v)
                                    for v in column) + "}" for column in columns)
    return tuple(slots), literals


def _seed_week(rng: random.Random, close: datetime, users: list[int]
               ) -> tuple[dict[int, int], list[tuple]]:
    """Distinct weekly totals, spread over Monday–Thursday so a close from Friday on sees them
    all: the totals and the activity rows that add up to them."""
    monday = close.date() - timedelta(days=close.weekday())
    totals = dict(zip(users, rng.sample(range(20, 400), len(users)), strict=True))
    rows = []
    for uid, total in totals.items():
        cuts = sorted(rng.sample(range(1, total), 3))
        for day, (a, b) in enumerate(zip([0, *cuts], [*cuts, total], strict=True)):
            at = datetime.combine(monday + timedelta(days=day), time(9 + day), close.tzinfo)
            rows.append((uid, b - a, at))
    return totals, rows

