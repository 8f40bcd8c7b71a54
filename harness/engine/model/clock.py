"""Virtual time: each replica's tick times, and the order in which the runner dispatches them."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import groupby
from zoneinfo import ZoneInfo

from harness.engine.model.scenario import TZ, Scenario


@dataclass(frozen=True)
class Tick:
    t: datetime  # true virtual time of the tick
    replica: str
    now: datetime  # what the replica's own clock says: t plus its skew
    waited: timedelta = timedelta(0)  # its turns in the queue of the job's lock (lock_turn)

    @property
    def command(self) -> None:
        """A tick runs in a long-lived replica, not as a command of its own."""
        return None


def tick_plan(s: Scenario, boots: dict[str, list[datetime]] | None = None) -> list[Tick]:
    """Every tick of every replica in [start, end), sorted by time then replica.

    A replica ticks every `interval` from its boot (start + offset). `boots` adds later boots
    of a replica (a deploy replaces its process): from each boot on, the phase starts afresh.
    Time is added in UTC: elapsed time, whatever a DST change in the lab's zone (Mexico City's,
    before 2023) does to its wall clock.
    """
    ticks: list[Tick] = []
    for i, name in enumerate(s.replica_names):
        start = s.start.astimezone(UTC)
        phases = sorted([start + s.offsets[i], *(b.astimezone(UTC)
                                                  for b in (boots or {}).get(name, []))])
        for j, boot in enumerate(phases):
            until = phases[j + 1] if j + 1 < len(phases) else s.end.astimezone(UTC)
            t = boot
            while t < min(until, s.end.astimezone(UTC)):
                ticks.append(Tick(t.astimezone(TZ), name, (t + s.skew[i]).astimezone(TZ)))
                t += s.interval
    return _take_turns(sorted(ticks, key=lambda k: (k.t, k.replica)), s)


def _take_turns(ticks: list[Tick], s: Scenario) -> list[Tick]:
    """With a `lock_turn`, the replicas ticking at one instant queue on the job's lock, in name
    order: the k-th in line runs k turns later (a turn past the end is not played)."""
    if not s.lock_turn:
        return ticks
    turned = []
    for _, same in groupby(ticks, key=lambda k: k.t):
        for k, tick in enumerate(same):
            wait = s.lock_turn * k
            turned.append(Tick(_later(tick.t, wait), tick.replica, _later(tick.now, wait),
                               wait))
    return sorted((k for k in turned if k.t < s.end), key=lambda k: (k.t, k.replica))


def _later(t: datetime, by: timedelta) -> datetime:
    """`t` plus elapsed time, in t's own zone."""
    return (t.astimezone(UTC) + by).astimezone(t.tzinfo)


def instants(ticks: list[Tick], seed: int) -> list[tuple[datetime, list[Tick]]]:
    """Group ticks by instant. Inside one instant the seed fixes the dispatch order, so the
    same seed replays the same interleaving, and the replicas' transactions overlap."""
    rng = random.Random(seed)
    grouped = []
    for t, same in groupby(ticks, key=lambda k: k.t):
        batch = list(same)
        rng.shuffle(batch)
        grouped.append((t, batch))
    return grouped


def clock_reads(now: datetime, t: datetime) -> str:
    """'its clock reads 18:00:40' for a tick at t told `now`, with the date when the skew
    crosses one ('its clock reads 2026-06-05 18:00:00'); with the day and the zone's name where
    the app reads its clock in a zone of its own ('its clock reads Sun 02:00:00 CET'); '' for
    a true clock in the lab's zone."""
    if isinstance(now.tzinfo, ZoneInfo) and now.tzinfo != TZ:  # told in the app's own zone
        return f"its clock reads {now:%a %H:%M:%S %Z}"
    if now.astimezone(UTC) == t.astimezone(UTC):  # (across zones, a repeated hour compares unequal)
        return ""
    same_day = now.date() == t.astimezone(now.tzinfo).date()
    return f"its clock reads {now:{'' if same_day else '%Y-%m-%d '}%H:%M:%S}"


def offset_label(t: datetime, origin: datetime) -> str:
    """'T+1m30s' style label of a virtual time relative to the run's start."""
    delta = t - origin
    sign = "-" if delta < timedelta(0) else "+"
    secs = int(abs(delta).total_seconds())
    d, rem = divmod(secs, 86400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    text = "".join(f"{v}{u}" for v, u in ((d, "d"), (h, "h"), (m, "m"), (sec, "s")) if v)
    return f"T{sign}{text}" if text else "T=0"
