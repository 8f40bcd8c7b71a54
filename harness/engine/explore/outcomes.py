"""What an exploration found: each outcome, how many schedules gave it and the shortest one
that did; and the shares of one exploration (`racelab explore --partition I/N`, each a
--json file) joined into the whole exploration's JSON (`racelab explore --merge FILES`)."""

from __future__ import annotations

import hashlib
import importlib.metadata
from dataclasses import dataclass, field
from pathlib import Path

from harness.engine.model import registry
from harness.engine.model.history import ABORTS
from harness.engine.model.tracks import OUTCOME_WORDS
from harness.errors import UserError


@dataclass
class Outcome:
    label: str  # e.g. "2 payouts"
    bad: bool  # a duplicate or a miss
    failed: bool = False  # a tick raised, lost its connection or hung
    schedules: int = 0
    shortest: str = ""  # the fewest preemptions, then the fewest steps
    shortest_preemptions: int = 0

    def add(self, schedule: str, preemptions: int) -> None:
        self.schedules += 1
        key = (preemptions, len(schedule.replace(" ", "")), schedule)
        if not self.shortest or key < (self.shortest_preemptions,
                                       len(self.shortest.replace(" ", "")), self.shortest):
            self.shortest, self.shortest_preemptions = schedule, preemptions

    def to_json(self) -> dict:
        return {"outcome": self.label, "bad": self.bad, "failed": self.failed,
                "schedules": self.schedules,
                "shortest": self.shortest, "shortest_preemptions": self.shortest_preemptions}


@dataclass
class Exploration:
    stage: str
    scenario: str
    replicas: int
    strategy_name: str  # the strategy kind that picked the schedules (harness.engine.explore)
    strategy: dict = field(default_factory=dict)  # the keys the strategy adds to the JSON
    explored: list[str] = field(default_factory=list)  # each schedule this share owns, as run
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    first_bad_at: int | None = None  # the first schedule that duplicated or missed: the Nth
    reruns: int = 0  # runs repeated because a race between waiters went another way
    unreached: list[str] = field(default_factory=list)  # branches no run of RACE_TRIES reached
    seconds: float = 0.0
    complete: bool = False  # False: stopped (Ctrl-C) before the tree was done
    settings: dict[str, str] = field(default_factory=dict)  # each run axis's value (model.axes)
    fingerprint: str = ""  # of the stage's code, the scenario and racelab's version (`fingerprint`)

    @property
    def bad(self) -> list[Outcome]:
        return [o for o in self.outcomes.values() if o.bad]

    def to_json(self) -> dict:
        return {"stage": self.stage, "scenario": self.scenario, "replicas": self.replicas,
                "settings": self.settings, "fingerprint": self.fingerprint,
                "strategy": self.strategy_name, **self.strategy,
                "schedules": len(self.explored), "first_bad_at": self.first_bad_at,
                "complete": self.complete, "reruns": self.reruns,
                "unreached": self.unreached, "seconds": round(self.seconds, 3),
                "schedules_per_s": round(len(self.explored) / self.seconds, 2)
                if self.seconds else 0.0,
                "outcomes": [o.to_json() for o in self.outcomes.values()],
                "duplicates_or_misses": bool(self.bad), "explored": self.explored}


SKIPPED = {"__pycache__", ".venv", "venv", "node_modules", ".git"}
FINGERPRINTED = {".py", ".sql", ".toml", ".json"}


def fingerprint(stage_path: Path, scenario_text: str) -> str:
    """What an exploration's shares must have in common to be one tree: the stage's code (its
    .py, .sql, .toml and .json files, by path and content), the scenario as it ran, and the
    racelab version; 16 hex digits of their SHA-256."""
    digest = hashlib.sha256()
    for path in sorted(stage_path.rglob("*")):
        rel = path.relative_to(stage_path)
        if path.suffix in FINGERPRINTED and path.is_file() and not SKIPPED & set(rel.parts):
            digest.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    try:
        version = importlib.metadata.version("racelab")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    digest.update(scenario_text.encode() + b"\0" + version.encode())
    return digest.hexdigest()[:16]


def outcome_of(result) -> tuple[str, bool, bool]:
    """A schedule's outcome in words, from the verdict and the ticks that did not end well
    (`"1 payout, B's tick failed: IntegrityError"`); whether it duplicated, missed or
    overlapped; whether a tick failed."""
    v = result.verdict
    report = registry.track(result.stage.track).report
    label = OUTCOME_WORDS.of(report)(v)
    if v.missed:
        label += f", {v.missed} missed"
    if v.partial:
        label += f", {v.partial} partial"
    if v.overlapped:
        label += f", {v.overlapped} overlapped"
    failed = failed_ticks(result.events)
    for replica, ended in failed.items():
        label += f", {replica}'s {ended}"
    return label, bool(v.duplicates or v.missed or v.overlapped), bool(failed)


def failed_ticks(events) -> dict[str, str]:
    """Each process whose tick (or task) raised or lost its connection → how it ended, from
    the events' outcomes and the error each raised (its class, the note's data)."""
    ended: dict[str, str] = {}
    errors: dict[str, list[str]] = {}
    aborted: dict[str, str] = {}
    for e in events:
        if e.event in ("tick", "task") and e.outcome in ("failed", "unknown"):
            ended.setdefault(e.replica, e.outcome)
        elif e.event in ("error", "commit-failed") and e.data.get("sqlstate") in ABORTS:
            aborted[e.replica] = e.data["sqlstate"]
        elif e.event in ("error", "commit-failed") and "error" in e.data:
            errors.setdefault(e.replica, []).append(e.data["error"])
    words = {}
    for replica, outcome in sorted(ended.items()):
        if replica in aborted:  # PostgreSQL's doing, not the stage's error
            words[replica] = f"tick aborted ({aborted[replica]}, not retried)"
            continue
        kinds = ", ".join(dict.fromkeys(errors.get(replica, [])))
        what = "tick lost its connection" if outcome == "unknown" else "tick failed"
        words[replica] = f"{what}: {kinds}" if kinds else what
    return words


# an exploration's own keys that differ by share
COUNTED = ("schedules", "first_bad_at", "complete", "reruns", "unreached", "seconds",
           "schedules_per_s", "outcomes", "duplicates_or_misses", "explored")
PER_SHARE = ("partition", "shape_runs")  # the keys of a strategy that explores in shares


def merge(parts: list[dict]) -> dict:
    """The shares' JSON as one exploration's: the parts of one stage, scenario and strategy,
    with the same value of every key the strategy adds (its bound) but its share's own."""
    first = parts[0]
    if "partition" not in first:
        raise UserError(f"--merge: the {first['strategy']} strategy explores no shares")
    same = [k for k in first if k not in COUNTED and k not in PER_SHARE]
    for p in parts[1:]:
        if p.get("fingerprint") != first.get("fingerprint"):
            raise UserError("--merge: the shares ran different code, scenarios or racelab "
                            f"versions (fingerprint {first.get('fingerprint')!r} vs "
                            f"{p.get('fingerprint')!r}): explore every share again")
        if p.get("cut") != first.get("cut"):
            raise UserError("--merge: the shares cut the tree into different pieces (their runs "
                            "near the root went different ways): explore every share again")
        if any(p.get(k) != first[k] for k in same):
            raise UserError("--merge: the files explore different things (" + ", ".join(
                f"{k} {first[k]!r} vs {p.get(k)!r}" for k in same if p.get(k) != first[k])
                + ")")
    shares = {p["partition"][1] for p in parts}
    seen = sorted(p["partition"][0] for p in parts)
    if len(shares) != 1 or seen != list(range(1, shares.pop() + 1)):
        raise UserError(f"--merge: the files are shares {seen}, not every share of one split")
    outcomes: dict[str, Outcome] = {}
    for p in parts:
        for o in p["outcomes"]:
            into = outcomes.setdefault(o["outcome"], Outcome(o["outcome"], o["bad"],
                                                             o["failed"]))
            count = into.schedules
            into.add(o["shortest"], o["shortest_preemptions"])
            into.schedules = count + o["schedules"]
    explored = sorted(x for p in parts for x in p["explored"])
    if len(set(explored)) != len(explored):
        raise UserError("--merge: a schedule is in two of the files: they are not the shares of "
                        "one split")
    seconds = sum(p["seconds"] for p in parts)
    whole = {"partition": [1, 1], "shape_runs": sum(p.get("shape_runs", 0) for p in parts)}
    return {**{k: whole[k] if k in PER_SHARE else first[k] for k in first if k not in COUNTED},
            "schedules": len(explored),
            "first_bad_at": min((p["first_bad_at"] for p in parts
                                 if p.get("first_bad_at") is not None), default=None),
            "complete": all(p["complete"] for p in parts),
            "reruns": sum(p["reruns"] for p in parts),
            "unreached": [u for p in parts for u in p["unreached"]], "seconds": round(seconds, 3),
            "schedules_per_s": round(len(explored) / seconds, 2) if seconds else 0.0,
            "outcomes": [o.to_json() for o in outcomes.values()],
            "duplicates_or_misses": any(o.bad for o in outcomes.values()),
            "explored": explored}
