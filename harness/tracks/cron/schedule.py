"""When the weekly close falls due: the stages' own schedule (Friday 18:00, Mexico City) unless
a scenario's [world] table configures the app otherwise, as a team in another zone would.

    [world]
    timezone = "Europe/Berlin"   # the app's APP_TIMEZONE: the zone its clock is read in
    close = "SUN 02:00"          # its LEADERBOARD_CLOSE: the weekday and hour the week closes

The stages read both from their environment (their defaults are this module's), so a run of a
configured scenario gets them there (`env`), its replicas' clocks read in that zone (`zone`),
stage 05's deployed schedule is the matching cron expression (`expression`), and the checker
expects one payout per week at the configured close (`closes`).

The close is a weekday from Friday on (the lab seeds each week's activity Monday to Thursday,
which the close counts) and a whole hour (the stages' loops open a 15-minute window at minute 0
of the close's hour); the scenario loader refuses any other in one line (`check`). A close
whose local time a DST jump skips falls due at the first instant after the jump (02:00 that does
not exist: 03:00 summer time), and one a fall-back repeats falls due the first time it comes;
either way the week is owed one payout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from harness.engine.model.scenario import TZ, Scenario

WEEKDAYS = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
ZONE_KEY, CLOSE_KEY = "timezone", "close"
WORLD_KEYS = {ZONE_KEY: (str, 64), CLOSE_KEY: (str, 32)}
ZONE_ENV, CLOSE_ENV = "APP_TIMEZONE", "LEADERBOARD_CLOSE"  # what the stages read


@dataclass(frozen=True)
class Close:
    zone: ZoneInfo
    weekday: int  # Monday 0 … Sunday 6
    at: time

    @property
    def configured(self) -> bool:
        """Whether a scenario set it (its runs' replicas are told): not the stages' default."""
        return self != DEFAULT

    @property
    def words(self) -> str:
        """'FRI 18:00' as a stage reads it."""
        return f"{WEEKDAYS[self.weekday]} {self.at:%H:%M}"

    @property
    def env(self) -> dict[str, str]:
        if not self.configured:
            return {}
        return {ZONE_ENV: self.zone.key, CLOSE_ENV: self.words}

    @property
    def expression(self) -> str:
        """The EventBridge Scheduler cron expression of this close, in `zone`."""
        return f"cron({self.at.minute} {self.at.hour} ? * {WEEKDAYS[self.weekday]} *)"

    def due(self, day: date) -> datetime:
        """The instant the close of `day`'s week falls due, in the lab's zone (TZ): the first
        of a repeated local time, the first instant after a skipped one."""
        monday = day - timedelta(days=day.weekday())
        local = datetime.combine(monday + timedelta(days=self.weekday), self.at, self.zone)
        return local.astimezone(TZ)  # fold 0: the first of two, or the offset before a jump

    def closes(self, start: datetime, end: datetime) -> list[datetime]:
        """Every close in [start, end), in order."""
        found, day = [], start.astimezone(self.zone).date() - timedelta(days=7)
        while (at := self.due(day)) < end:
            if at >= start:
                found.append(at)
            day += timedelta(days=7)
        return found

    def week_due(self, year: int, week: int) -> datetime:
        """When ISO week `year`-W`week`'s close falls due."""
        return self.due(date.fromisocalendar(year, week, 1))


DEFAULT = Close(ZoneInfo("America/Mexico_City"), WEEKDAYS.index("FRI"), time(18, 0))


def of(s: Scenario) -> Close:
    """The close a scenario's run has: its [world] table's, else the stages' own."""
    return _of(dict(s.world))


def check(world: dict[str, tuple]) -> tuple[str, str] | None:
    """The first key of a [world] table whose value no close can be made of, and why (the
    scenario loader's one line); None when every value is good."""
    for key in (key for key in (ZONE_KEY, CLOSE_KEY) if key in world):
        try:
            _of({key: world[key]})
        except ValueError as e:
            return key, str(e)
    return None


def _of(said: dict[str, tuple]) -> Close:
    zone, weekday, at = DEFAULT.zone, DEFAULT.weekday, DEFAULT.at
    if ZONE_KEY in said:
        zone = _zone(_one(said[ZONE_KEY]))
    if CLOSE_KEY in said:
        weekday, at = _close(_one(said[CLOSE_KEY]))
    return Close(zone, weekday, at)


def _one(values: tuple) -> str:
    if len(values) != 1:
        raise ValueError(f"one value, not {len(values)}")
    return values[0]


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{name!r} is not a time zone of the tz database (write e.g. "
                         "Europe/Berlin)") from None


_CLOSE = re.compile(r"(FRI|SAT|SUN) ([01]\d|2[0-3]):00")


def _close(text: str) -> tuple[int, time]:
    """'SUN 02:00': a weekday from Friday on (the lab seeds each week's activity Monday to
    Thursday, which the close counts) and a whole hour (the stages' window opens at minute 0
    of the close's hour and runs 15 minutes)."""
    m = _CLOSE.fullmatch(text)
    if m is None:
        raise ValueError(f"{text!r} is not a weekday from FRI to SUN and a whole hour like 'SUN "
                         "02:00' (the lab seeds each week's activity Monday to Thursday; the "
                         "stages' window opens at minute 0 of the close's hour)")
    return WEEKDAYS.index(m.group(1)), time(int(m.group(2)))
