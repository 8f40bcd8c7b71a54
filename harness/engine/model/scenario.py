"""Scenarios: declarative, seeded descriptions of one experiment, loaded from TOML."""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from stat import S_ISREG
from string import ascii_uppercase
from typing import Any
from zoneinfo import ZoneInfo

from harness.engine.model import limits, registry, scenario_file
from harness.errors import UserError, did_you_mean

TZ = ZoneInfo("America/Mexico_City")
KEYS = {
    "name", "track", "description", "replicas", "interval", "start", "end",
    "offsets", "skew", "seed", "faults", "world", "lock_turn",
}
FAULT_KEYS = {"kind", "at", "replica"}
_DURATION = re.compile(r"^([+-]?)((?:\d+(?:\.\d+)?[smhd])+)$")
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Fault:
    """A fault as a scenario states it: which kind, when, on which replica (its kind is
    harness.engine.model.faults's to say)."""

    kind: str
    at: datetime | None = None
    replica: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"kind": self.kind, "replica": self.replica,
                "at": self.at.isoformat() if self.at else None}


@dataclass(frozen=True)
class Scenario:
    name: str
    track: str
    replicas: int
    interval: timedelta
    start: datetime
    end: datetime
    offsets: tuple[timedelta, ...]
    skew: tuple[timedelta, ...]
    faults: tuple[Fault, ...] = ()
    seed: int = 7
    description: str = ""
    source: str = field(default="", compare=False)
    world: tuple[tuple[str, tuple], ...] = ()  # the [world] table, e.g. (("low_credits", (1,)),)
    # how long the job holds a blocking lock: replicas ticking at one instant take turns
    lock_turn: timedelta = timedelta(0)

    @property
    def replica_names(self) -> list[str]:
        return replica_names(self.replicas)

    def with_replicas(self, n: int) -> Scenario:
        """The same experiment with n replicas. Offsets spread evenly over the interval are
        spread evenly again; any others keep their first n and continue the step between the
        last two (staggered's 0s, 1m, 2m goes on 3m, 4m; simultaneous stays at 0s), as a phase
        within the interval."""
        if self.offsets == spread(self.interval, self.replicas):
            offsets = spread(self.interval, n)
        else:
            step = self.offsets[-1] - self.offsets[-2] if len(self.offsets) > 1 else timedelta(0)
            offsets = tuple(self.offsets[i] if i < len(self.offsets)
                            else (self.offsets[-1] + step * (i + 1 - len(self.offsets)))
                            % self.interval for i in range(n))
        skew = tuple(self.skew[i] if i < len(self.skew) else timedelta(0) for i in range(n))
        limits.ticks(limits.replicas(n, "--replicas"), self.start, self.end, self.interval)
        return _replace(self, replicas=n, offsets=offsets, skew=skew)

    def with_seed(self, seed: int) -> Scenario:
        return _replace(self, seed=seed)


def _replace(s: Scenario, **changes: Any) -> Scenario:
    from dataclasses import replace

    return replace(s, **changes)


def spread(interval: timedelta, n: int) -> tuple[timedelta, ...]:
    """n replicas' offsets spread evenly over one interval: a file without `offsets` gets this."""
    return tuple(interval * i / n for i in range(n))


def replica_names(n: int) -> list[str]:
    return [ascii_uppercase[i] if i < 26 else f"R{i + 1}" for i in range(n)]


def parse_duration(text: str) -> timedelta:
    """'15m', '+40s', '-1m30s', '2h', '1d' → timedelta; anything else raises ValueError."""
    m = _DURATION.match(text.strip()) if isinstance(text, str) else None
    if not m:
        raise ValueError(f"{text!r} is not a duration like 90s, 15m, 2h, 1d or -40s")
    seconds = sum(float(n) * _UNIT[u] for n, u in _PART.findall(m.group(2)))
    return limits.duration(-seconds if m.group(1) == "-" else seconds, text)


def _parse_time(text: Any) -> datetime:
    if not isinstance(text, (str, datetime)):
        raise ValueError(f"{text!r} is not a time like 2026-05-29T18:00:00-06:00")
    value = limits.year(text if isinstance(text, datetime) else datetime.fromisoformat(text),
                        text)
    if value.tzinfo is None:
        raise ValueError(f"{text!r} has no UTC offset (write it like 2026-05-29T18:00:00-06:00)")
    return value.astimezone(TZ)


def from_dict(data: dict[str, Any], source: str = "<scenario>") -> Scenario:
    """Build a Scenario, or raise UserError naming the source, the key and what is allowed."""

    def bad(key: str, why: str) -> UserError:
        return UserError(f"{source}: {key}: {why}")

    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise bad(unknown[0], f"unknown key{did_you_mean(unknown[0], KEYS)}; allowed keys: "
                  f"{', '.join(sorted(KEYS))}")
    for required in ("name", "replicas", "start", "end"):
        if required not in data:
            raise bad(required, "missing (required: name, replicas, start, end)")
    name = data["name"]
    if not isinstance(name, str) or not name:
        raise bad("name", "must be a non-empty string")
    if not name.isprintable():  # an escape sequence would reach the terminal and the SVG
        raise bad("name", "must be printable: no control characters")
    tracks = registry.tracks()
    track = data.get("track", next(iter(tracks)))
    if not isinstance(track, str) or track not in tracks:
        raise bad("track", f"{track!r} is not one of {', '.join(tracks)}")
    replicas = limits.replicas(data["replicas"], f"{source}: replicas")
    try:
        interval = parse_duration(data.get("interval", "15m"))
    except ValueError as e:
        raise bad("interval", str(e)) from None
    if interval <= timedelta(0):
        raise bad("interval", "must be positive")
    times = {}
    for key in ("start", "end"):
        try:
            times[key] = _parse_time(data[key])
        except (TypeError, ValueError) as e:
            raise bad(key, f"{e}; write ISO-8601 with an offset") from None
    if times["end"] <= times["start"]:
        raise bad("end", "must be after start")
    try:
        limits.ticks(replicas, times["start"], times["end"], interval)
    except UserError as e:
        raise bad("interval", str(e)) from None
    names = replica_names(replicas)
    offsets = _duration_list(data, "offsets", replicas, bad)
    if offsets is None:
        offsets = spread(interval, replicas)
    if any(o < timedelta(0) for o in offsets):  # a tick before start escapes the tick bound
        raise bad("offsets", "must not be negative: an offset is how long after start a "
                  "replica's loop first ticks (a clock that runs behind is skew)")
    skew = _duration_list(data, "skew", replicas, bad) or tuple(timedelta(0) for _ in names)
    seed = data.get("seed", 7)
    if not isinstance(seed, int) or isinstance(seed, bool) or not abs(seed) < 2**63:
        raise bad("seed", f"{seed!r} is not a whole number of at most 63 bits")
    if not isinstance(data.get("faults", []), list):
        raise bad("faults", "must be a list of tables ([[faults]] in TOML)")
    faults = tuple(_fault(i, f, names, bad, track, (times["start"], times["end"]))
                   for i, f in enumerate(data.get("faults", [])))
    world = _world(data.get("world", {}), track, bad)
    description = data.get("description", "")
    if not isinstance(description, str):
        raise bad("description", "must be a string")
    if not description.isprintable():
        raise bad("description", "must be printable: no control characters, one line")
    try:
        lock_turn = parse_duration(data.get("lock_turn", "0s"))
    except ValueError as e:
        raise bad("lock_turn", str(e)) from None
    if lock_turn < timedelta(0):
        raise bad("lock_turn", "must not be negative")
    return Scenario(name, track, replicas, interval, times["start"], times["end"], offsets, skew,
                    faults, seed, description, source, world, lock_turn)


def _world(raw: Any, track: str, bad) -> tuple[tuple[str, tuple], ...]:
    """The [world] table: each key one of the track's, each value a list of ids or names (one
    may be written alone: `timezone = "Europe/Berlin"`)."""
    allowed = registry.track(track).world_keys
    if not isinstance(raw, dict):
        raise bad("world", "must be a table")
    items = []
    for key, value in raw.items():
        if key not in allowed:
            known = ", ".join(sorted(allowed)) or "nothing"
            raise bad(f"world.{key}", f"unknown key{did_you_mean(key, allowed)}; the {track} "
                      f"track's world allows {known}")
        kind, longest = allowed[key] if isinstance(allowed[key], tuple) else (allowed[key], None)
        if isinstance(value, kind) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, list) or any(
                not isinstance(v, kind) or isinstance(v, bool) for v in value):
            raise bad(f"world.{key}", f"must be a list of {kind.__name__}s")
        if kind is int and any(not 1 <= v < 2**63 for v in value):
            raise bad(f"world.{key}", "ids are whole numbers from 1 to 2^63 - 1")
        if longest is not None and any(len(v) > longest for v in value):
            raise bad(f"world.{key}", f"each name at most {longest} characters")
        if len(set(value)) != len(value):
            raise bad(f"world.{key}", "names each one once")
        items.append((key, tuple(value)))
    check = registry.track(track).check_world
    if check is not None and (wrong := check(dict(items))) is not None:
        raise bad(f"world.{wrong[0]}", wrong[1])
    return tuple(items)


def _duration_list(data, key, replicas, bad) -> tuple[timedelta, ...] | None:
    if key not in data:
        return None
    raw = data[key]
    if not isinstance(raw, list) or len(raw) != replicas:
        raise bad(key, f"must be a list of {replicas} durations, one per replica")
    try:
        return tuple(parse_duration(x) for x in raw)
    except ValueError as e:
        raise bad(key, str(e)) from None


def _fault(index: int, raw: Any, names: list[str], bad, track: str,
           window: tuple[datetime, datetime] | None = None) -> Fault:
    where = f"faults[{index}]"
    if not isinstance(raw, dict):
        raise bad(where, "must be a table with kind, at and replica")
    unknown = sorted(set(raw) - FAULT_KEYS)
    if unknown:
        raise bad(f"{where}.{unknown[0]}", f"unknown key{did_you_mean(unknown[0], FAULT_KEYS)}; "
                  f"allowed: {', '.join(sorted(FAULT_KEYS))}")
    kind = raw.get("kind")
    kinds = registry.fault_kinds()
    if not isinstance(kind, str) or kind not in kinds:
        known = ", ".join(k for k, s in kinds.items() if s.track in (None, track))
        raise bad(f"{where}.kind", f"{kind!r} is not a fault{did_you_mean(kind, kinds)}; known on "
                  f"the {track} track: {known}")
    return kinds[kind].validate(raw, where, names, bad, track, window, _parse_time)


# A scenario file unchanged this long (by its mtime and its ctime, which nothing can set back) is
# taken to stay unchanged while its inode, size, mtime and ctime do: two writes within one tick
# of a coarse clock could not be told apart.
SETTLED_NS = 2_000_000_000
_loaded: dict[tuple, Scenario] = {}


def load_file(path: str | Path) -> Scenario:
    """The scenario in a .toml or .json file; anything else about the file is a UserError.
    A settled regular file is parsed once per process (the canonical scenarios are read for
    every run's marks), for the fault kinds and tracks registered when it was."""
    try:
        st = os.stat(path)
    except OSError:
        st = None  # scenario_file says what is wrong with it
    key = None
    if st is not None and S_ISREG(st.st_mode) and (
            time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > SETTLED_NS):
        key = (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
               tuple(registry.fault_kinds()), tuple(registry.tracks()))
        if key in _loaded:
            return _loaded[key]
    loaded = from_dict(scenario_file.read(Path(path)), str(path))
    if key is not None:
        _loaded[key] = loaded
    return loaded


def canonical(track: str | None = None) -> list[Scenario]:
    """The scenarios that ship with the lab's tracks, in the order the matrix shows them."""
    tracks = list(registry.tracks().values())
    order = {(t.name, n): i for t in tracks for i, n in enumerate(t.scenario_order)}
    found = [load_file(p) for t in tracks for p in sorted(t.scenario_dir.glob("*.toml"))]
    found += [s for t in tracks if t.borrow_scenarios for s in t.borrow_scenarios(found)]
    found.sort(key=lambda s: ([t.name for t in tracks].index(s.track),
                              order.get((s.track, s.name), 99), s.name))
    return [s for s in found if track is None or s.track == track]


def resolve(name_or_file: str, track: str | None = None) -> Scenario:
    if name_or_file.endswith((".toml", ".json")) or "/" in name_or_file:
        return load_file(name_or_file)
    found = [s for s in canonical() if s.name == name_or_file]
    for s in found:
        if track is None or s.track == track:
            return s
    if track and (step := registry.track(track).step_scenario_dir / f"{name_or_file}.toml"
                  ).is_file():
        return load_file(str(step))
    names = [s.name for s in canonical(track)]
    if found:
        raise UserError(f"scenario {name_or_file!r} is for the {found[0].track} track, not "
                        f"{track}; {track} scenarios: {', '.join(names)}")
    raise UserError(f"unknown scenario {name_or_file!r}{did_you_mean(name_or_file, names)}; "
                    f"known: {', '.join(names)} (or a FILE.toml or FILE.json)")


def format_duration(d: timedelta, signed: bool = False) -> str:
    """The inverse of parse_duration: 90 s → '1m30s', 0 → '0s'; `signed` writes '+40s'."""
    total = d.total_seconds()
    sign = "-" if total < 0 else ("+" if signed else "")
    whole, frac = divmod(abs(total), 1)
    days, rem = divmod(int(whole), 86400)
    hours, rem = divmod(rem, 3600)
    minutes, seconds = divmod(rem, 60)
    secs = f"{seconds + frac:g}" if frac else str(seconds)
    parts = [f"{v}{u}" for v, u in ((days, "d"), (hours, "h"), (minutes, "m")) if v]
    if secs != "0" or not parts:
        parts.append(f"{secs}s")
    return sign + "".join(parts)


def to_dict(s: Scenario) -> dict[str, Any]:
    """The scenario as the fields of its TOML file; from_dict(to_dict(s)) == s."""
    data: dict[str, Any] = {"name": s.name, "track": s.track}
    if s.description:
        data["description"] = s.description
    data.update({
        "replicas": s.replicas, "interval": format_duration(s.interval),
        "start": s.start.isoformat(), "end": s.end.isoformat(),
        "offsets": [format_duration(o) for o in s.offsets],
        "skew": [format_duration(k, signed=True) for k in s.skew], "seed": s.seed,
    })
    if s.lock_turn:
        data["lock_turn"] = format_duration(s.lock_turn)
    if s.world:
        data["world"] = {key: list(values) for key, values in s.world}
    data["faults"] = [{k: v for k, v in (("kind", f.kind), ("replica", f.replica),
                                         ("at", f.at.isoformat() if f.at else None)) if v}
                      for f in s.faults]
    return data


def to_toml(s: Scenario) -> str:
    """The scenario as a file `racelab run STAGE --scenario FILE.toml` runs again."""
    data = to_dict(s)
    tables = {key: data.pop(key) for key in ("world", "faults") if key in data}
    lines = [f"{key} = {_toml_value(value)}" for key, value in data.items()]
    if tables.get("world"):
        lines += ["", "[world]"] + [f"{k} = {_toml_value(v)}" for k, v in tables["world"].items()]
    for fault in tables.get("faults", []):
        lines += ["", "[[faults]]"] + [f"{k} = {_toml_value(v)}" for k, v in fault.items()]
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    return str(value)
