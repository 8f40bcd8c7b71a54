"""The verdict: what landed, read from the run's database, never from what replicas said."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import asdict, dataclass
from datetime import date, datetime

import psycopg

from harness.engine.model.tracks import Totals
from harness.tracks.cron.schedule import DEFAULT, Close
from harness.tracks.cron.world import BONUS_COINS, JOB, TOP_N, Expectation, week_key

_WEEK = re.compile(r"\b\d{4}-W\d{2}\b")
_MONDAY = re.compile(r"\bweek of (\d{4}-\d{2}-\d{2})\b")
_KEY = re.compile(r"(\d{4})-W(\d{2})\Z")


@dataclass(frozen=True)
class SlotVerdict:
    job: str
    key: str
    expected: int
    runs: int
    duplicates: int
    missed: int
    partial: bool
    why: str = ""  # what a partial run lacks, in a few words
    paid: str = ""  # a slot due after the run ended: "early"; due before it started: "late"
    lost: int = 0  # runs a failover lost: acknowledged by the old primary, not on the new one
    # what each consumer of the payout received for the slot, over all its runs
    coins: int = 0
    notifications: int = 0
    threads: int = 0

    def received(self) -> dict[str, tuple[int, int]]:
        """Each consumer → (what it received, what one run should have given it)."""
        return {"notifications": (self.notifications, self.expected * TOP_N),
                "coins": (self.coins, self.expected * TOP_N * BONUS_COINS),
                "threads": (self.threads, self.expected)}

    def to_json(self) -> dict:
        data = asdict(self)
        data["partial"] = int(self.partial)  # a count, as at the top: partial runs landed
        for key in ("why", "paid", "lost"):
            if not data[key]:
                del data[key]
        for key in ("coins", "notifications", "threads"):
            del data[key]
        data["received"] = {name: {"landed": got, "expected": want}
                            for name, (got, want) in self.received().items()}
        return data


@dataclass(frozen=True)
class PayoutVerdict(Totals):
    slots: tuple[SlotVerdict, ...]
    coins_expected: int
    coins_paid: int

    def parts(self) -> tuple[SlotVerdict, ...]:
        return self.slots

    @property
    def runs(self) -> int:
        return self.total("runs")

    @property
    def partial(self) -> int:
        return sum(1 for s in self.slots if s.partial)

    def to_json(self) -> dict:
        return {
            "slots": [s.to_json() for s in self.slots],
            **self.counts(),
            "coins": {"expected": self.coins_expected, "paid": self.coins_paid},
        }


@dataclass(frozen=True)
class PayoutRows:
    """The payout's rows in a database, each with the transaction that wrote it (xmin)."""

    credits: tuple = ()  # (reason, created_at, user_id, amount, xid)
    notes: tuple = ()  # (text, created_at, user_id, xid)
    threads: tuple = ()  # (title, created_at, xid): the bot's

    def xids(self) -> set[str]:
        return {row[-1] for rows in (self.credits, self.notes, self.threads) for row in rows}

    def written_by(self, xids: set[str]) -> PayoutRows:
        """Only the rows those transactions wrote, each transaction named `lost:<xid>`: a
        promoted standby hands out the same transaction ids again."""
        def pick(rows):
            return tuple((*row[:-1], f"lost:{row[-1]}") for row in rows if row[-1] in xids)
        return PayoutRows(pick(self.credits), pick(self.notes), pick(self.threads))

    def __add__(self, other: PayoutRows) -> PayoutRows:
        return PayoutRows(self.credits + other.credits, self.notes + other.notes,
                          self.threads + other.threads)


def rows(conn: psycopg.Connection) -> PayoutRows:
    """The payout's rows as they stand in the database `conn` reaches."""
    return PayoutRows(
        tuple(conn.execute("SELECT reason, created_at, user_id, amount, xmin::text "
                           "FROM token_transactions").fetchall()),
        tuple(conn.execute("SELECT text, created_at, user_id, xmin::text "
                           "FROM notifications").fetchall()),
        tuple(conn.execute("SELECT title, created_at, xmin::text FROM threads WHERE author_id "
                           "IN (SELECT id FROM users WHERE is_bot)").fetchall()))


def check(conn: psycopg.Connection, world: Expectation, lost: PayoutRows = PayoutRows()
          ) -> PayoutVerdict:
    """One run of a slot = one committed transaction (xmin) that wrote any of the payout's rows:
    a coin credit, a notification, a thread by the bot (the seed writes none of the first two and
    no thread of the bot's). The slot a row serves is the week it names (a key such as 2026-W22
    anywhere in its text, or the Monday in a summary's title), else the week it was written in:
    the app's wording never splits one transaction into two runs or hides a row. `lost`: rows a
    failover lost, which their writers saw committed (each of their transactions a run too)."""
    found = rows(conn) + lost
    credits, notes, threads = found.credits, found.notes, found.threads

    effects: dict[str, dict[str, dict[str, list]]] = defaultdict(
        lambda: defaultdict(lambda: {"credits": [], "notes": [], "threads": []}))
    for reason, at, uid, amount, xid in credits:
        effects[_named_week(reason, at, world.close)][xid]["credits"].append((uid, amount))
    for text, at, uid, xid in notes:
        effects[_named_week(text, at, world.close)][xid]["notes"].append(uid)
    for title, at, xid in threads:
        effects[_named_week(title, at, world.close)][xid]["threads"].append(title)

    verdicts = []
    for slot in world.slots:
        verdicts.append(_verdict(slot.key, 1, effects.pop(slot.key, {}), set(slot.winners)))
    for key, runs in sorted(effects.items()):  # effects for a slot the run did not expect
        verdicts.append(_verdict(key, 0, runs, set(), _outside(key, world)))
    paid = sum(amount for _, _, _, amount, _ in credits)
    return PayoutVerdict(tuple(verdicts), world.coins_expected, paid)


def _named_week(text: str, at: datetime, close: Close) -> str:
    """The week a row serves: the ISO week its text names ("2026-W22"), or whose Monday a
    summary's title names ("Top 3 of the week of 2026-05-25"), else the week of `at` in the
    app's zone."""
    if m := _WEEK.search(text):
        return m.group(0)
    if m := _MONDAY.search(text):
        return week_key(date.fromisoformat(m.group(1)))
    return week_key(at.astimezone(close.zone))


def slot_due(key: str, close: Close = DEFAULT) -> datetime | None:
    """When a week's slot falls due (the week's close), or None for a key that is no week."""
    m = _KEY.match(key)
    if not m:
        return None
    try:
        return close.week_due(int(m.group(1)), int(m.group(2)))
    except ValueError:  # W53 of a year with 52
        return None


def _outside(key: str, world: Expectation) -> str:
    """A slot the run did not expect: "early" when it falls due after the run ended (paid before
    it was due), "late" when it fell due before the run started, "" when its key is no week."""
    due = slot_due(key, world.close)
    if due is None:
        return ""
    return "early" if due >= world.end else ("late" if due < world.start else "")


def _verdict(key: str, expected: int, runs: dict, winners: set[int],
             outside: str = "") -> SlotVerdict:
    lacking = []
    for run in runs.values():
        paid = {uid for uid, _ in run["credits"]}
        if len(run["credits"]) != TOP_N or any(a != BONUS_COINS for _, a in run["credits"]):
            lacking.append(f"{len(run['credits'])} of {TOP_N} credits")
        if winners and paid != winners:
            lacking.append("paid the wrong members")
        if len(run["notes"]) != TOP_N:
            lacking.append(f"{len(run['notes'])} of {TOP_N} notifications")
        if len(run["threads"]) != 1:
            lacking.append("no summary thread")
    n = len(runs)
    every = list(runs.values())
    return SlotVerdict(
        job=JOB, key=key, expected=expected, runs=n,
        duplicates=max(0, n - max(expected, 1 if outside else 0)),  # early or late: once is
        missed=1 if expected and n == 0 else 0,  # its own finding, a second time a duplicate
        partial=bool(lacking), why="; ".join(dict.fromkeys(lacking)), paid=outside,
        lost=sum(1 for xid in runs if xid.startswith("lost:")),
        coins=sum(a for run in every for _, a in run["credits"]),
        notifications=sum(len(run["notes"]) for run in every),
        threads=sum(len(run["threads"]) for run in every),
    )


def has_claims(conn: psycopg.Connection) -> bool:
    """Whether the stage has a claim table (worker_runs): only some do."""
    return conn.execute("SELECT to_regclass('worker_runs') IS NOT NULL").fetchone()[0]


def state(conn: psycopg.Connection, claims_table: bool) -> dict:
    """The shared state a reader of the history cares about, as it stands: the payout's coins
    paid so far, its credit rows, claim rows (worker_runs, where `claims_table`: has_claims),
    threads. Read after every commit: one query."""
    claims = "(SELECT count(*) FROM worker_runs)" if claims_table else "NULL::bigint"
    coins, credits, threads, claim_rows = conn.execute(
        "SELECT coalesce(sum(amount), 0), count(*), (SELECT count(*) FROM threads WHERE author_id "
        f"IN (SELECT id FROM users WHERE is_bot)), {claims} FROM token_transactions").fetchone()
    return {"coins_paid": int(coins), "credit_rows": credits, "claim_rows": claim_rows,
            "threads": threads}
