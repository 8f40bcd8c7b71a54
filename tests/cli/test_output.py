"""Output a user can script: pipes, warnings, errors that say what to do (issue 13)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import ROOT, racelab

LONG_FAULT = """
name = "terminate-a"
replicas = 2
start = "2026-05-29T17:45:00-06:00"
end = "2026-05-29T18:30:00-06:00"

[[faults]]
kind = "terminate-backend"
replica = "A"
at = "2026-05-29T18:00:00-06:00"
"""


def test_a_reader_leaving_early_ends_the_run_quietly_with_exit_0(pg):
    """`racelab run 01 --scenario staggered --timeline | head -3`, at its hardest: the reader
    has gone before the first byte is written. Exit 0, nothing on stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "01", "--scenario",
                             "staggered", "--timeline"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0
    assert err == b""


def test_a_piped_timeline_has_one_event_per_line_unwrapped_and_plain(pg, tmp_path):
    """Piped, each tick is one line however long (no wrap at the console's width), without
    colour codes: `grep 'replica A'` finds all of A's tick."""
    path = tmp_path / "terminate-a.toml"
    path.write_text(LONG_FAULT)
    out = racelab("run", "02", "--scenario", str(path), "--timeline")
    assert out.returncode == 0, out.stderr
    assert "\x1b[" not in out.stdout
    timeline = out.stdout.split("\n\n", 1)[1].splitlines()
    assert timeline and all(line.lstrip().startswith("T") for line in timeline), timeline
    long = [line for line in timeline if "18:00:00" in line]
    assert len(long) == 1 and len(long[0]) > 200
    assert long[0].rstrip().endswith("terminating connection due to administrator command")


def test_more_replicas_continue_staggered_and_the_output_says_where_each_ticks(pg):
    """`run 01 --scenario staggered --replicas 5`: A…E a minute apart, so 01 pays 5 times; the
    text says where each replica ticks and the JSON gives each one's offset."""
    out = racelab("run", "01", "--scenario", "staggered", "--replicas", "5", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["offsets"] == {"A": "0s", "B": "1m", "C": "2m", "D": "3m", "E": "4m"}
    assert (data["runs"], data["coins"]["paid"]) == (5, 150)
    text = racelab("run", "01", "--scenario", "staggered", "--replicas", "5")
    assert ("replicas tick every 15m from Fri 18:00:00: A T=0 · B T+1m · C T+2m · D T+3m · "
            "E T+4m") in text.stdout
    assert "· 5 replicas ·" in text.stdout
    assert "· 1 replica ·" in racelab("run", "01", "--replicas", "1").stdout
