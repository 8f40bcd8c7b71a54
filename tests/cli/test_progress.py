"""A long run says so: a warning on stderr before a run estimated past a few minutes, and on a
terminal a live bar; piped output and --json get nothing extra on stdout."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys

from tests.helpers import ROOT, racelab

A_DAY = """
name = "a-day"
replicas = 3
interval = "15m"
start = "2026-05-25T00:00:00-06:00"
end = "2026-05-26T00:00:00-06:00"
offsets = ["0s", "5m", "10m"]
"""  # 288 ticks: long enough for the bar, a second or two of run

EVERY_FIVE_SECONDS_FOR_A_DAY = """
name = "every-five-seconds"
replicas = 3
interval = "5s"
start = "2026-05-25T00:00:00-06:00"
end = "2026-05-26T00:00:00-06:00"
"""  # 3 × 17,280 = 51,840 ticks: under the lab's cap of 100,000, over three minutes


def _on_a_terminal(*args: str) -> str:
    """What a user sees when stdout and stderr are a terminal (a pty)."""
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *args], cwd=ROOT,
                            stdin=subprocess.DEVNULL, stdout=child, stderr=child,
                            env={**os.environ, "TERM": "xterm", "COLUMNS": "160"})
    os.close(child)
    seen = b""
    while True:
        ready, _, _ = select.select([main], [], [], 120)
        if not ready:
            proc.kill()
            raise AssertionError("no output for 120 s")
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(main)
    assert proc.wait(60) == 0, seen.decode(errors="replace")
    return seen.decode(errors="replace")


def test_a_long_run_shows_ticks_done_of_total_and_virtual_time_on_a_terminal_only(pg, tmp_path):
    day = tmp_path / "a-day.toml"
    day.write_text(A_DAY)
    shown = _on_a_terminal("run", "03", "--scenario", str(day))
    assert "/288" in shown and "ticks ·" in shown and "virtual Mon 25 May" in shown
    assert "leaderboard" in shown or "paid" in shown or "duplicates" in shown  # the table

    piped = racelab("run", "03", "--scenario", str(day))
    assert piped.returncode == 0, piped.stderr
    assert "/288" not in piped.stdout and "virtual" not in piped.stdout + piped.stderr

    as_json = _on_a_terminal("run", "03", "--scenario", str(day), "--json")
    assert "/288" not in as_json
    assert json.loads(as_json)["scenario"] == "a-day"  # one object, nothing else


def test_a_run_estimated_past_minutes_says_so_before_it_starts_and_json_stays_clean(pg,
                                                                                    tmp_path):
    huge = tmp_path / "every-five-seconds.toml"
    huge.write_text(EVERY_FIVE_SECONDS_FOR_A_DAY)
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "03", "--scenario",
                             str(huge), "--json"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    said, _, _ = select.select([proc.stderr], [], [], 60)  # before the run starts
    warning = proc.stderr.readline() if said else ""
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert "51,840 ticks" in warning and "minutes" in warning and "Ctrl-C" in warning
    assert proc.returncode == 130, err
    assert out == ""
