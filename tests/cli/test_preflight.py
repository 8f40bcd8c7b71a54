"""`make preflight` (issue 41, item 14): a workshop's morning in one command, each check a line
with ✓ or ✗ and, for a ✗, what to do; exit 0 only when every check holds."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers import ROOT


def _preflight(scratch) -> subprocess.CompletedProcess:
    env = {**os.environ, "RACELAB_EXERCISES_SCRATCH": str(scratch),
           "RACELAB_PREFLIGHT_WITHIN_S": "600"}  # the run's seconds are the laptop's, not ours
    return subprocess.run([sys.executable, "-m", "harness.exercises", "preflight"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)


def test_a_ready_laptop_passes_every_check(pg, tmp_path):
    out = _preflight(tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert [line[:1] for line in lines[:-1]] == ["✓"] * (len(lines) - 1)
    assert lines[0].startswith("✓ PostgreSQL") and lines[1].startswith("✓ Redis")
    assert lines[2].startswith("✓ racelab run 03 --scenario staggered: paid 1 time in ")
    assert lines[-1] == "ready for the workshop"


def test_yesterdays_edits_in_an_exercise_copy_fail_and_say_how_to_reset(pg, tmp_path):
    env = {**os.environ, "RACELAB_EXERCISES_SCRATCH": str(tmp_path)}
    started = subprocess.run([sys.executable, "-m", "harness.exercises", "start", "01"],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    assert _preflight(tmp_path).returncode == 0  # a fresh copy is no one's edits
    worker, = tmp_path.glob("01-*/myapp/worker.py")
    worker.write_text(worker.read_text() + "\n# yesterday's attempt\n")
    out = _preflight(tmp_path)
    assert out.returncode == 1
    bad = [line for line in out.stdout.splitlines() if line.startswith("✗")]
    assert len(bad) == 1 and bad[0].endswith("holds edits: make reset-exercise-01"), bad
    assert out.stdout.splitlines()[-1] == "1 check to fix before the room arrives"
