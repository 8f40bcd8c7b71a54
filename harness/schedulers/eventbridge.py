"""EventBridge Scheduler, emulated: the schedules as deployed, their fire times, their commands.

The schedules come from the synthesised CloudFormation template of stage 05
(`05-eventbridge/infra/template.json`), so the lab runs exactly what would be deployed. Everything
here is a pure function: the harness decides when to start a task process, how many times a slot
is delivered, and what happens when its retries run out.

Semantics copied from EventBridge Scheduler:
- cron expressions have six fields (minutes hours day-of-month month day-of-week year) and are
  evaluated in the schedule's time zone; a local time skipped by a DST jump does not fire, a local
  time repeated by a DST fall-back fires once (the first time);
- rate expressions count elapsed time from the schedule's start date;
- every attempt of one slot carries the same `<aws.scheduler.scheduled-time>` (UTC, e.g.
  `2026-05-30T00:00:00Z`), while `<aws.scheduler.execution-id>` and
  `<aws.scheduler.attempt-number>` change per attempt.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

SCHEDULED_TIME = "<aws.scheduler.scheduled-time>"
EXECUTION_ID = "<aws.scheduler.execution-id>"
ATTEMPT_NUMBER = "<aws.scheduler.attempt-number>"

# EventBridge Scheduler's defaults when a schedule has no RetryPolicy.
DEFAULT_MAX_RETRIES = 185
DEFAULT_MAX_EVENT_AGE_S = 86_400

SCHEDULE_TYPE = "AWS::Scheduler::Schedule"
JOB_MODULE = "myapp.jobs"


@dataclass(frozen=True)
class Schedule:
    """One deployed schedule: when it fires, how often a slot is retried, what it runs."""

    name: str  # the job's name, as passed to `python -m myapp.jobs NAME`
    expression: str  # cron(...), rate(...) or at(...)
    timezone: str  # IANA name the expression is evaluated in
    max_retries: int  # retries after the first attempt of a slot
    max_event_age_s: int  # a slot is not retried once it is this old
    dlq: bool  # an exhausted slot goes to a dead-letter queue (else it is dropped)
    command: tuple[str, ...]  # container command, context attributes unrendered

    @property
    def max_attempts(self) -> int:
        """Deliveries one slot gets at most: the first attempt plus the retries."""
        return self.max_retries + 1


# --- the template --------------------------------------------------------------------------------


def load_schedules(path: str | Path) -> list[Schedule]:
    """The enabled schedules of a CloudFormation template, sorted by name."""
    template = json.loads(Path(path).read_text())
    schedules = [
        _schedule_from_resource(logical_id, resource.get("Properties", {}))
        for logical_id, resource in template.get("Resources", {}).items()
        if resource.get("Type") == SCHEDULE_TYPE
    ]
    return sorted((s for s in schedules if s is not None), key=lambda s: s.name)


def _schedule_from_resource(logical_id: str, props: dict) -> Schedule | None:
    if props.get("State", "ENABLED") != "ENABLED":
        return None
    target = props.get("Target", {})
    retry = target.get("RetryPolicy", {})
    command = _container_command(logical_id, target.get("Input"))
    return Schedule(
        name=_job_name(command) or props.get("Name") or logical_id,
        expression=props["ScheduleExpression"],
        timezone=props.get("ScheduleExpressionTimezone", "UTC"),
        max_retries=int(retry.get("MaximumRetryAttempts", DEFAULT_MAX_RETRIES)),
        max_event_age_s=int(retry.get("MaximumEventAgeInSeconds", DEFAULT_MAX_EVENT_AGE_S)),
        dlq=bool(target.get("DeadLetterConfig", {}).get("Arn")),
        command=command,
    )


def _container_command(logical_id: str, raw_input: str | None) -> tuple[str, ...]:
    """The command override of the ECS RunTask input (one container)."""
    if not isinstance(raw_input, str):
        raise ValueError(f"schedule {logical_id}: target has no literal Input to run")
    overrides = json.loads(raw_input).get("containerOverrides", [])
    commands = [o["command"] for o in overrides if o.get("command")]
    if len(commands) != 1:
        raise ValueError(
            f"schedule {logical_id}: expected one container command override, got {len(commands)}"
        )
    return tuple(commands[0])


def _job_name(command: tuple[str, ...]) -> str | None:
    for i, arg in enumerate(command[:-1]):
        if arg == JOB_MODULE and i > 0 and command[i - 1] == "-m":
            return command[i + 1]
    return None


# --- commands ------------------------------------------------------------------------------------


def render_command(
    schedule: Schedule,
    scheduled_time: datetime,
    *,
    attempt: int = 1,
    execution_id: str | None = None,
) -> list[str]:
    """The command one delivery runs, with the context attributes filled in.

    The scheduled time is rendered as EventBridge does (UTC, second precision, `Z`), so every
    attempt of one slot gets the same `--now`. The execution id defaults to a stable digest of
    (schedule, slot, attempt): different per attempt, as in AWS, yet reproducible per seed.
    """
    if attempt < 1:
        raise ValueError(f"attempt numbers start at 1, got {attempt}")
    slot = format_scheduled_time(scheduled_time)
    if execution_id is None:
        execution_id = hashlib.sha256(f"{schedule.name}|{slot}|{attempt}".encode()).hexdigest()[:16]
    values = {SCHEDULED_TIME: slot, EXECUTION_ID: execution_id, ATTEMPT_NUMBER: str(attempt)}
    rendered = []
    for arg in schedule.command:
        for attribute, value in values.items():
            arg = arg.replace(attribute, value)
        rendered.append(arg)
    return rendered


def format_scheduled_time(when: datetime) -> str:
    """`<aws.scheduler.scheduled-time>` as EventBridge sends it, e.g. `2026-05-30T00:00:00Z`."""
    _require_aware(when, "scheduled_time")
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- fire times ----------------------------------------------------------------------------------


def fire_times(expression: str, timezone: str, start: datetime, end: datetime) -> list[datetime]:
    """Every time in [start, end) at which `expression` fires, in `timezone`, in order.

    `start` and `end` are aware datetimes. Results are aware and expressed in `timezone`.
    A rate(...) schedule is anchored at `start` (its StartDate): it fires at `start`,
    `start + rate`, ...; rate arithmetic is elapsed time, so `rate(1 day)` stays 24 h across DST.
    """
    _require_aware(start, "start")
    _require_aware(end, "end")
    tz = ZoneInfo(timezone)
    expression = expression.strip()
    kind, _, rest = expression.partition("(")
    if not rest.endswith(")"):
        raise ValueError(f"not a schedule expression: {expression!r}")
    body = rest[:-1].strip()
    if kind == "cron":
        times = _cron_times(_Cron.parse(body), tz, start, end)
    elif kind == "rate":
        times = _rate_times(_parse_rate(body), start, end)
    elif kind == "at":
        times = _at_times(body, tz, start, end)
    else:
        raise ValueError(f"unknown schedule expression type {kind!r} in {expression!r}")
    return [t.astimezone(tz) for t in times]


def _require_aware(when: datetime, what: str) -> None:
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"{what} must be an aware datetime, got {when!r}")


def _local(naive: datetime, tz: ZoneInfo) -> datetime | None:
    """`naive` as an aware time in `tz`; None if a DST jump skips it (fold=0: first of two)."""
    aware = naive.replace(tzinfo=tz)
    if aware.astimezone(UTC).astimezone(tz).replace(tzinfo=None) != naive:
        return None
    return aware


# rate(...)

_RATE_UNITS = {"minute": 60, "hour": 3600, "day": 86_400}


def _parse_rate(body: str) -> timedelta:
    match = re.fullmatch(r"(\d+)\s+(minute|hour|day)s?", body)
    if not match or int(match.group(1)) < 1:
        raise ValueError(f"rate expression must be 'rate(N minute(s)|hour(s)|day(s))': {body!r}")
    return timedelta(seconds=int(match.group(1)) * _RATE_UNITS[match.group(2)])


def _rate_times(every: timedelta, start: datetime, end: datetime) -> list[datetime]:
    times = []
    when = start.astimezone(UTC)
    while when < end:
        times.append(when)
        when += every
    return times


# at(...)


def _at_times(body: str, tz: ZoneInfo, start: datetime, end: datetime) -> list[datetime]:
    try:
        naive = datetime.strptime(body, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        raise ValueError(f"at expression must be 'at(yyyy-mm-ddThh:mm:ss)': {body!r}") from None
    when = _local(naive, tz)
    return [when] if when is not None and start <= when < end else []


# cron(...)

_MONTHS = {
    name: number
    for number, name in enumerate(
        ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"), 1
    )
}
_WEEKDAYS = {
    name: number for number, name in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"), 1)
}


@dataclass(frozen=True)
class _Cron:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int] | None  # None: '?'
    months: frozenset[int]
    weekdays: frozenset[int] | None  # None: '?'; 1 = SUN ... 7 = SAT
    years: frozenset[int]

    @classmethod
    def parse(cls, body: str) -> _Cron:
        fields = body.split()
        if len(fields) != 6:
            raise ValueError(
                "cron expression needs 6 fields (minutes hours day-of-month month day-of-week "
                f"year), got {len(fields)}: {body!r}"
            )
        minute, hour, dom, month, dow, year = fields
        if (dom == "?") == (dow == "?"):
            raise ValueError(
                "cron expression needs '?' in exactly one of day-of-month and day-of-week: "
                f"{body!r}"
            )
        return cls(
            minutes=_parse_field(minute, 0, 59, "minutes"),
            hours=_parse_field(hour, 0, 23, "hours"),
            days=None if dom == "?" else _parse_field(dom, 1, 31, "day-of-month"),
            months=_parse_field(month, 1, 12, "month", _MONTHS),
            weekdays=None if dow == "?" else _parse_field(dow, 1, 7, "day-of-week", _WEEKDAYS),
            years=_parse_field(year, 1970, 2199, "year"),
        )

    def matches_day(self, day: date) -> bool:
        if day.year not in self.years or day.month not in self.months:
            return False
        if self.days is not None:
            return day.day in self.days
        assert self.weekdays is not None
        return (day.weekday() + 1) % 7 + 1 in self.weekdays  # Python: MON = 0; AWS: SUN = 1


def _parse_field(
    text: str, lo: int, hi: int, what: str, names: dict[str, int] | None = None
) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        if "#" in part or re.fullmatch(r"\d*L|LW|\d+W|L-\d+", part.upper()):
            raise NotImplementedError(f"cron {what}: 'L', 'W' and '#' are not supported: {text!r}")
        base, slash, step_text = part.partition("/")
        if base == "*":
            first, last = lo, hi
        elif "-" in base:
            a, b = base.split("-", 1)
            first, last = _value(a, lo, hi, what, names), _value(b, lo, hi, what, names)
        else:
            first = _value(base, lo, hi, what, names)
            last = hi if slash else first
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) < 1:
                raise ValueError(f"cron {what}: bad step in {part!r}")
            step = int(step_text)
        if first > last:
            raise ValueError(f"cron {what}: range {part!r} runs backwards")
        values.update(range(first, last + 1, step))
    return frozenset(values)


def _value(text: str, lo: int, hi: int, what: str, names: dict[str, int] | None) -> int:
    if names and text.upper() in names:
        return names[text.upper()]
    if not text.isdigit() or not lo <= int(text) <= hi:
        raise ValueError(f"cron {what}: {text!r} is not in {lo}-{hi}")
    return int(text)


def _days(first: date, last: date) -> Iterator[date]:
    day = first
    while day <= last:
        yield day
        day += timedelta(days=1)


def _cron_times(cron: _Cron, tz: ZoneInfo, start: datetime, end: datetime) -> list[datetime]:
    times = []
    for day in _days(start.astimezone(tz).date(), end.astimezone(tz).date()):
        if not cron.matches_day(day):
            continue
        for hour in sorted(cron.hours):
            for minute in sorted(cron.minutes):
                when = _local(datetime(day.year, day.month, day.day, hour, minute), tz)
                if when is not None and start <= when < end:
                    times.append(when)
    return times


def dst_passes(expression: str, timezone: str, start: datetime, end: datetime
               ) -> list[tuple[datetime, str]]:
    """The local times of a cron expression in [start, end) that a DST change skips or repeats,
    each with the instant it stands for and what EventBridge Scheduler does about it: a skipped
    time (at the instant after the jump) does not fire; a repeated one (at its second coming)
    fired the first time only. Nothing for rate and at expressions."""
    kind, _, rest = expression.strip().partition("(")
    if kind != "cron" or not rest.endswith(")"):
        return []
    cron, tz = _Cron.parse(rest[:-1].strip()), ZoneInfo(timezone)
    found = []
    for day in _days(start.astimezone(tz).date(), end.astimezone(tz).date()):
        if not cron.matches_day(day):
            continue
        for hour in sorted(cron.hours):
            for minute in sorted(cron.minutes):
                naive = datetime(day.year, day.month, day.day, hour, minute)
                first, second = (naive.replace(tzinfo=tz, fold=f) for f in (0, 1))
                local = f"{naive:%H:%M} on {day}"
                if _local(naive, tz) is None:  # at the instant after the jump, read in tz
                    at = first.astimezone(UTC).astimezone(tz)
                    words = (f"{local} does not exist in {timezone} (the clocks jump past it): "
                             "it does not fire")
                elif first.utcoffset() != second.utcoffset():
                    at, words = second, (f"{local} comes again in {timezone} (the clocks go "
                                         "back): it fired the first time only")
                else:
                    continue
                if start <= at < end:
                    found.append((at, words))
    return found
