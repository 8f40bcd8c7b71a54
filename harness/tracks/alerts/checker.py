"""The alerts track's verdict: what reached the sink, against what a correct system sends.

The expectation is computed here from the scenario alone (the harness's own copy of the dedup
rule), never from the stage's code; the counts come from the sink's recorded deliveries and
listings, never from what replicas say they sent.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from harness.engine.model.clock import Tick
from harness.engine.model.faults import Fault, kind_of
from harness.engine.model.scenario import Scenario
from harness.engine.model.tracks import Landed, Totals

DEDUP_WINDOWS = {  # one alert per key per window; a P0 is never held back
    "low_credits": timedelta(hours=24),
    "stuck_job": timedelta(hours=1),
    "service_down": timedelta(minutes=10),
}
P0_KINDS = {"service_down"}
RECONCILE_EVERY = timedelta(minutes=2)
STUCK_AFTER = timedelta(minutes=15)
FLOOD_JOBS = 600
FLOOD_FIRST_ID = 1000


def window_start(now: datetime) -> datetime:
    """Start of the 2-minute reconciliation window `now` falls in (even minutes of the day)."""
    every = int(RECONCILE_EVERY.total_seconds())
    seconds = now.hour * 3600 + now.minute * 60 + now.second
    return now.replace(microsecond=0) - timedelta(seconds=seconds % every)


def floods(faults: tuple[Fault, ...]) -> list[Fault]:
    """The faults whose kind floods the app with stuck jobs (its `floods_jobs`), in the
    scenario's order: the index-th one's jobs are `flood_ids(index)`."""
    return [f for f in faults if getattr(kind_of(f), "floods_jobs", False)]


def flood_ids(index: int) -> range:
    """Ids of the background jobs of the index-th stuck-job flood of a scenario."""
    first = FLOOD_FIRST_ID + index * FLOOD_JOBS
    return range(first, first + FLOOD_JOBS)


def _once_per_window(times: list[datetime], window: timedelta) -> int:
    """How many times one shared dedup table lets an alert out, checked at these times."""
    sent, open_until = 0, None
    for t in sorted(times):
        if open_until is None or t >= open_until:
            sent += 1
            open_until = t + window
    return sent


def expected_alerts(s: Scenario, ticks: list[Tick]) -> dict[str, int]:
    """Deliveries per alert key that a correct system makes over these ticks. Its dedup window
    runs in true time, as one shared table's does, whatever a replica's clock reads: a check
    11 minutes after the last alert is inside its 24 hours even on a clock 25 hours ahead."""
    world = dict(s.world)
    times = [tick.t for tick in ticks]
    expected: dict[str, int] = {}
    for creator in world.get("low_credits", ()):
        expected[f"low_credits:{creator}"] = _once_per_window(times, DEDUP_WINDOWS["low_credits"])
    for service in world.get("services_down", ()):
        expected[f"service_down:{service}"] = len(times)  # a P0 goes out on every check
    for index, flood in enumerate(floods(s.faults)):
        seen = [k.t for k in ticks if k.t >= flood.at and k.now >= flood.at]
        n = _once_per_window(seen, DEDUP_WINDOWS["stuck_job"])
        expected.update({f"stuck_job:{job}": n for job in flood_ids(index)})
    return expected


@dataclass(frozen=True)
class Overlap:
    """The pass of one reconciliation window still running when the next listed window's pass
    began: it had listed, and its rows were not yet in the database when the next pass listed."""

    window: datetime
    by: str  # the replica whose pass listed it first
    listed_at: datetime
    written_by: datetime  # the first instant the database showed its rows (synced_at in it)
    next_window: datetime
    next_by: str
    next_listed_at: datetime

    def to_json(self) -> dict:
        return {"window": self.window.isoformat(), "by": self.by,
                "listed_at": self.listed_at.isoformat(), "written_by": self.written_by.isoformat(),
                "next_window": self.next_window.isoformat(), "next_by": self.next_by,
                "next_listed_at": self.next_listed_at.isoformat()}


def overlaps(listed: dict[datetime, tuple[datetime, str]],
             written: dict[datetime, datetime]) -> list[Overlap]:
    """Passes of consecutive listed windows that ran at once. `listed`: each window's first
    listing at the sink (the instant, the replica); `written`: the first instant the database
    showed a workspace synced in that window (its rows' synced_at, read before each instant's
    ticks and at the end). A pass whose rows first showed after the next window's pass listed
    was still running when that pass began; one whose rows never showed (overwritten within
    one instant) is not counted: nothing on record says when it ended."""
    windows = sorted(listed)
    return [Overlap(w, listed[w][1], listed[w][0], written[w], n, listed[n][1], listed[n][0])
            for w, n in zip(windows, windows[1:], strict=False)
            if w in written and written[w] > listed[n][0]]


def expected_windows(ticks: list[Tick]) -> list[datetime]:
    """Reconciliation windows that some replica ticks in: each should be listed once."""
    return sorted({window_start(tick.now) for tick in ticks})


@dataclass(frozen=True)
class AlertVerdict(Landed):
    key: str
    sent: int
    expected: int

    @property
    def kind(self) -> str:
        return self.key.split(":", 1)[0]

    def landed(self) -> int:
        return self.sent

    def to_json(self) -> dict:
        return {"key": self.key, "sent": self.sent, "expected": self.expected,
                "duplicates": self.duplicates, "missed": self.missed}


@dataclass(frozen=True)
class WindowVerdict(Landed):
    window: datetime
    listed: int
    expected: int
    overlapped: bool = False  # its pass still ran when the next window's pass began

    def landed(self) -> int:
        return self.listed

    def to_json(self) -> dict:
        return {"window": self.window.isoformat(), "listed": self.listed,
                "expected": self.expected, "duplicates": self.duplicates, "missed": self.missed,
                "overlapped": self.overlapped}


@dataclass(frozen=True)
class AlertsVerdict(Totals):
    alerts: tuple[AlertVerdict, ...]
    windows: tuple[WindowVerdict, ...]
    findings: dict = field(default_factory=dict, compare=False)
    accepted: int = 0  # duplicates that are the accepted cost of failing open


    def parts(self) -> tuple[AlertVerdict | WindowVerdict, ...]:
        return (*self.alerts, *self.windows)

    @property
    def sent(self) -> int:
        return sum(a.sent for a in self.alerts)

    @property
    def listed(self) -> int:
        return sum(w.listed for w in self.windows)

    @property
    def overlapped(self) -> int:
        """Passes of consecutive windows that ran at once (`overlaps`)."""
        return sum(w.overlapped for w in self.windows)

    @property
    def runs(self) -> int:
        """Side effects that landed: alert deliveries plus sandbox listings."""
        return self.sent + self.listed

    @property
    def partial(self) -> int:
        return 0  # an alert is delivered whole or not at all

    def to_json(self) -> dict:
        windows = [w.to_json() for w in self.windows]
        return {
            "alerts": [a.to_json() for a in self.alerts],
            "sent": self.sent,
            "alert_counts": {"expected": sum(a.expected for a in self.alerts), "sent": self.sent,
                             "duplicates": sum(a.duplicates for a in self.alerts),
                             "missed": sum(a.missed for a in self.alerts)},
            **self.counts(),
            "listings": {
                "expected": sum(w["expected"] for w in windows),
                "listed": self.listed,
                "duplicates": sum(w["duplicates"] for w in windows),
                "missed": sum(w["missed"] for w in windows),
                "overlapped": self.overlapped,
                "windows": windows,
            },
            "accepted": self.accepted,
            "findings": self.findings,
        }


def _order(key: str) -> tuple:
    kind, _, subject = key.partition(":")
    return (kind, int(subject) if subject.isdigit() else 0, subject)


def verdict(expected: dict[str, int], sent: Counter[str], windows: list[datetime],
            listed: Counter[datetime], findings: dict, fail_open: bool = False,
            lost: set[str] = frozenset(), overlapped: set[datetime] = frozenset(),
            ) -> AlertsVerdict:
    """Per alert key and per reconciliation window: what landed against what should have, and
    whether its pass overlapped the next one's (`overlapped`, from `overlaps`). Duplicates are
    accepted when the app failed open (every one, with Redis down) or when a failover lost the
    claim of their alert key (`lost`)."""
    alerts = tuple(AlertVerdict(key, sent.get(key, 0), expected.get(key, 0))
                   for key in sorted({*expected, *sent}, key=_order))
    found = tuple(WindowVerdict(w, listed.get(w, 0), 1 if w in windows else 0, w in overlapped)
                  for w in sorted({*windows, *listed}))
    accepted = (sum(p.duplicates for p in (*alerts, *found)) if fail_open
                else sum(a.duplicates for a in alerts if a.key in lost))
    return AlertsVerdict(alerts, found, findings, accepted)
