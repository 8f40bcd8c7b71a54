"""Step mode on the alerts track: a replica holds before each SQL statement and each Redis
command it sends (harness.engine.inside.seam_redis), over the track's `simultaneous` (A and B check
at 14:00, creator 1 low on credits; a scenario for step and explore, not a matrix column).
Each schedule is a whole run: an exploration keeps its database, sink and redis-server from one
schedule to the next, each emptied (and the database seeded again) in between, so nothing of one
schedule's keys, deliveries or rows is there for the next (tests/lab/test_rig.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.infra import cleanup, owned
from tests.helpers import ROOT, alive, descendants, racelab_here, racelab_json, wait_for

SIM = ("--scenario", "simultaneous", "--replicas", "2")
THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"  # `make thorough`


def _explore(stage: str, *args: str) -> dict:
    data = racelab_json(racelab_here("explore", stage, "--json", *SIM, *args))
    assert data["complete"]
    return data


def _outcomes(data: dict) -> dict[str, int]:
    return {o["outcome"]: o["schedules"] for o in data["outcomes"]}


def _replay(stage: str, schedule: str) -> dict:
    return racelab_json(racelab_here("run", stage, *SIM, "--schedule", schedule, "--json"))


def test_00_sends_twice_without_a_preemption_and_the_schedule_replays(pg):
    """Each process remembers only its own sends: whoever goes first, the other sends again
    (and lists the sandboxes again), in both schedules with no preemption."""
    data = _explore("alerts-00", "--preemptions", "0")
    assert _outcomes(data) == {"2 alerts, 2 listings": 2}
    bad = data["outcomes"][0]
    assert bad["bad"] and bad["shortest_preemptions"] == 0
    replay = _replay("alerts-00", bad["shortest"])
    assert replay["schedule"] == bad["shortest"]
    assert replay["alert_counts"] == {"expected": 1, "sent": 2, "duplicates": 1, "missed": 0}
    assert (replay["runs"], replay["duplicates"]) == (4, 2)


def test_01_delivers_exactly_once_in_every_schedule_up_to_one_preemption(pg):
    """The claim is a SET NX in Redis: with no switch, or one before any statement or Redis
    command, one alert goes out and the sandboxes are listed once, in all 26 schedules."""
    data = _explore("alerts-01", "--preemptions", "1")
    assert _outcomes(data) == {"1 alert, 1 listing": 26}
    assert len(set(data["explored"])) == data["schedules"] == 26


@pytest.mark.skipif(not THOROUGH, reason="264 whole runs: in `make thorough`")
def test_01_delivers_exactly_once_in_every_schedule_up_to_two_preemptions(pg):
    """The claim is a SET NX in Redis: with a switch before any statement or Redis command, up
    to two of them, one alert goes out and the sandboxes are listed once. 264: the count of
    this tree (in order, 13 steps for the replica that sends and lists, 9 for the other: its
    claims answer false), measured twice, the same (26 with at most one preemption)."""
    data = _explore("alerts-01", "--preemptions", "2")
    assert _outcomes(data) == {"1 alert, 1 listing": 264}
    assert len(set(data["explored"])) == data["schedules"] == 264


def test_a_typed_schedule_shows_the_redis_commands_and_run_replays_it(pg):
    """`printf 'A\\nB\\nB\\n' | racelab step alerts-01 …`: the next Redis command is shown as
    one line without the run's key prefix; the schedule played replays to the same counts,
    and each step, the Redis ones too, is a `step` op in the history."""
    out = subprocess.run([sys.executable, "-m", "harness.cli", "step", "alerts-01", *SIM],
                         input="A\nB\nB\nB\nB\nB\nB\nB\n", capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "B  next: SET alert:low_credits:1 B@2026-06-05T14:00:00-06:00 NX PX 86400000" \
        in out.stdout
    assert "A  next: SET reconcile:2026-06-05T14:00:00-06:00 A NX PX 120000" in out.stdout
    schedule = next(x for x in out.stdout.splitlines() if x.startswith("schedule played: "))
    schedule = schedule.removeprefix("schedule played: ")
    replay = _replay("alerts-01", schedule)
    assert replay["schedule"] == schedule
    assert replay["alert_counts"] == {"expected": 1, "sent": 1, "duplicates": 0, "missed": 0}
    steps = [op for op in replay["history"] if op["f"] == "step"]
    assert "".join(op["process"] for op in steps) == schedule
    sets = [(op["process"], op["value"]["next"].split()[1]) for op in steps
            if op["value"]["next"].startswith("SET ")]
    assert sets == [("B", "alert:low_credits:1"), ("B", "reconcile:2026-06-05T14:00:00-06:00"),
                    ("A", "alert:low_credits:1"), ("A", "reconcile:2026-06-05T14:00:00-06:00")]


def _lab_dirs_of(pid: int) -> list[Path]:
    """The lab temp dirs (a redis-server's, the forkserver's) a racelab process left."""
    found = []
    for path in [d for root in cleanup.roots() for d in root.glob("racelab*")]:
        try:
            owner = json.loads((path / cleanup.OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue
        if owner.get("owner") == pid:
            found.append(path)
    return found


def test_nothing_is_left_after_exploring_alerts(pg):
    """No database, no process (the replicas, the redis-servers) and no temp dir of a server:
    its keys went with it."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "explore", "alerts-01", *SIM,
                             "--preemptions", "0"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    seen: set[int] = set()
    while proc.poll() is None:
        seen |= descendants(proc.pid)
        time.sleep(0.01)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert "1 alert, 1 listing: 2 schedules" in out
    assert len(seen) > 2  # the forkserver, the replicas, the servers were seen
    wait_for(lambda: not [p for p in seen if alive(p)], "the explore's processes to exit")
    assert [m.name for m in owned.made(pg.url) if m.pid == proc.pid] == []
    assert _lab_dirs_of(proc.pid) == []
