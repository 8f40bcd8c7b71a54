"""The shares of one exploration (`racelab explore --partition I/N`, each a --json file) joined
into the whole exploration's JSON: `racelab explore --merge FILES`."""

from __future__ import annotations

from harness.engine.explore import Outcome
from harness.errors import UserError


def merge(parts: list[dict]) -> dict:
    """The shares' JSON as one exploration's (the parts of one stage, scenario and bound)."""
    first = parts[0]
    same = ("stage", "scenario", "replicas", "preemptions")
    for p in parts[1:]:
        if any(p[k] != first[k] for k in same):
            raise UserError("--merge: the files explore different things (" + ", ".join(
                f"{k} {first[k]!r} vs {p[k]!r}" for k in same if p[k] != first[k]) + ")")
    shares = {p["partition"][1] for p in parts}
    seen = sorted(p["partition"][0] for p in parts)
    if len(shares) != 1 or seen != list(range(1, shares.pop() + 1)):
        raise UserError(f"--merge: the files are shares {seen}, not every share of one split")
    outcomes: dict[str, Outcome] = {}
    for p in parts:
        for o in p["outcomes"]:
            into = outcomes.setdefault(o["outcome"], Outcome(o["outcome"], o["bad"]))
            count = into.schedules
            into.add(o["shortest"], o["shortest_preemptions"])
            into.schedules = count + o["schedules"]
    explored = sorted(x for p in parts for x in p["explored"])
    if len(set(explored)) != len(explored):
        raise UserError("--merge: a schedule is in two of the files: they are not the shares of "
                        "one split")
    seconds = sum(p["seconds"] for p in parts)
    return {**{k: first[k] for k in same}, "partition": [1, 1], "schedules": len(explored),
            "shape_runs": sum(p["shape_runs"] for p in parts),
            "first_bad_at": min((p["first_bad_at"] for p in parts
                                 if p.get("first_bad_at") is not None), default=None),
            "complete": all(p["complete"] for p in parts), "seconds": round(seconds, 3),
            "schedules_per_s": round(len(explored) / seconds, 2) if seconds else 0.0,
            "outcomes": [o.to_json() for o in outcomes.values()],
            "duplicates_or_misses": any(o.bad for o in outcomes.values()),
            "explored": explored}
