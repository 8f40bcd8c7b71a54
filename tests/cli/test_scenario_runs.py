"""User-written scenario files through the CLI: every key of the format does what it says,
and every kind of bad file gets one line naming the file, the key and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import racelab_here, racelab_json

EVERY_KEY = """\
name = "my-experiment"
track = "cron"
description = "every key of the format"
replicas = 3
interval = "10m"
start = "2026-05-29T17:59:00-06:00"
end = "2026-05-29T18:20:00-06:00"
offsets = ["1m", "2m30s", "0s"]
skew = ["0s", "-1h", "+1d"]
seed = 11

[[faults]]
kind = "kill-mid-tick"
at = "2026-05-29T18:00:00-06:00"
replica = "A"

[[faults]]
kind = "section-missing"
"""




def _write(tmp_path: Path, text: str, name: str = "mine.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_every_key_of_a_scenario_file_shapes_the_run(pg, tmp_path):
    """Offsets, a 10-minute interval, the window, skew, seed and both faults all show in the
    run: A is killed at 18:00 and pays at 18:10; B's clock (an hour slow) and C's (a day
    fast) never read Friday 18:00–18:15; the missing section leaves the payout partial."""
    path = _write(tmp_path, EVERY_KEY)
    out = racelab_here("run", "03", "--scenario", str(path), "--json")
    assert out.returncode == 0, out.stderr
    data = racelab_json(out)
    assert (data["scenario"], data["replicas"], data["seed"]) == ("my-experiment", 3, 11)
    ticks = [(e["t"][11:19], e["replica"], e["outcome"], e.get("detail", ""))
             for e in data["events"] if e["event"] == "tick"]
    assert ticks == [
        ("17:59:00", "C", "ok", "its clock reads 2026-05-30 17:59:00"),
        ("18:00:00", "A", "unknown", "killed before its transaction ended"),
        ("18:01:30", "B", "ok", "its clock reads 17:01:30"),
        ("18:09:00", "C", "ok", "its clock reads 2026-05-30 18:09:00"),
        ("18:10:00", "A", "ok", ""),
        ("18:11:30", "B", "ok", "its clock reads 17:11:30"),
        ("18:19:00", "C", "ok", "its clock reads 2026-05-30 18:19:00"),
    ]
    claims = [(e["t"][11:19], e["replica"], e["detail"]) for e in data["events"]
              if e["event"] == "claim"]
    assert claims == [("18:10:00", "A", "true")]
    assert (data["runs"], data["duplicates"], data["missed"], data["partial"]) == (1, 0, 0, 1)
    assert data["coins"] == {"expected": 30, "paid": 30}


BASE = """\
name = "x"
replicas = 3
start = "2026-05-29T18:00:00-06:00"
end = "2026-05-29T18:15:00-06:00"
"""
KILL = '[[faults]]\nkind = "kill-mid-tick"\nreplica = "A"\nat = "2026-05-29T18:00:00-06:00"\n'

BAD = {
    "malformed-toml": ('name = "x\n', "not valid TOML", "line 1"),
    "unknown-key": (BASE + "colour = 1\n", "colour: unknown key", "allowed keys: description"),
    "unknown-fault-key": (BASE + KILL + "severity = 3\n", "faults[0].severity: unknown key",
                          "allowed: at, kind, replica"),
    "unknown-fault": (BASE + '[[faults]]\nkind = "meteor"\n', "faults[0].kind: 'meteor' is "
                      "not a fault", "known on the cron track: section-missing"),
    "alerts-fault-on-cron": (BASE + '[[faults]]\nkind = "redis-down"\n', "faults[0].kind",
                             "redis-down is a fault of the alerts track, not cron"),
    "bad-duration": (BASE + 'interval = "15 minutes"\n', "interval: '15 minutes' is not a "
                     "duration", "like 90s, 15m, 2h, 1d or -40s"),
    "bad-skew": (BASE + 'skew = ["0s", "1 min", "0s"]\n', "skew: '1 min' is not a duration",
                 "15m"),
    "offsets-wrong-length": (BASE + 'offsets = ["0s", "1m"]\n', "offsets: must be a list of 3",
                             "one per replica"),
    "bad-time": (BASE.replace('start = "2026-05-29T18:00:00-06:00"', 'start = "tomorrow"'),
                 "start:", "ISO-8601 with an offset"),
    "time-without-offset": (BASE.replace("18:15:00-06:00", "18:15:00"), "end:",
                            "has no UTC offset"),
    "end-before-start": (BASE.replace("18:15:00", "17:15:00"), "end:", "must be after start"),
    "replica-out-of-range": (BASE + KILL.replace('"A"', '"D"'), "faults[0].replica: 'D'",
                             "is not one of A, B, C"),
    "fault-needs-replica": (BASE + KILL.replace('replica = "A"\n', ""), "faults[0].replica",
                            "kill-mid-tick needs a replica (A, B, C)"),
    "fault-needs-time": (BASE + KILL.replace('at = "2026-05-29T18:00:00-06:00"\n', ""),
                         "faults[0].at", "kill-mid-tick needs a time"),
    "fault-outside-the-run": (BASE + KILL.replace("29T18:00", "30T18:00"), "faults[0].at",
                              "is outside the run"),
    "data-fault-with-a-time": (BASE + '[[faults]]\nkind = "section-missing"\n'
                               'at = "2026-05-29T18:00:00-06:00"\n', "faults[0].at",
                               "takes no at (allowed: kind)"),
    "replicas-zero": (BASE.replace("replicas = 3", "replicas = 0"), "replicas: 0",
                      "whole number from 1 to 64"),
    "missing-start": (BASE.replace('start = "2026-05-29T18:00:00-06:00"\n', ""), "start:",
                      "required: name, replicas, start, end"),
    "unknown-track": (BASE + 'track = "batch"\n', "track: 'batch'", "one of cron, alerts"),
    "seed-not-a-number": (BASE + 'seed = "seven"\n', "seed: 'seven'", "not a whole number"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_scenario_file_gets_one_line_naming_file_key_and_what_is_allowed(tmp_path, case):
    """A bad file stops the run before anything starts: exit 2, one line on stderr."""
    text, *words = BAD[case]
    path = _write(tmp_path, text, f"{case}.toml")
    out = racelab_here("run", "03", "--scenario", str(path))
    assert (out.returncode, out.stdout) == (2, "")
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(f"racelab: {path}: ")
    for word in words:
        assert word in lines[0]
