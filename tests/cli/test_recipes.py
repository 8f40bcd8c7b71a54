"""docs/ARCHITECTURE.md's four recipes, done from outside the package: each test writes the
recipe's files into a temp plugin folder and runs them through the CLI."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests.helpers import ROOT, racelab, racelab_json

DOC = ROOT / "docs" / "ARCHITECTURE.md"
BLOCK = re.compile(r"```(?:python|toml)\n# plugins/(\S+)\n(.*?)```", re.S)


def recipe(title: str, plugins: Path) -> list[str]:
    """Write the `# plugins/…` blocks of one recipe section into `plugins`; their paths."""
    section = DOC.read_text().split(f"## Recipe: {title}\n", 1)[1].split("\n## ", 1)[0]
    written = []
    for path, body in BLOCK.findall(section):
        target = plugins / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body)
        written.append(path)
    return written


def run_json(plugins: Path, *args: str) -> dict:
    out = racelab("run", *args, "--json", env={"RACELAB_PLUGINS": str(plugins)})
    assert out.returncode == 0, out.stderr
    return racelab_json(out)


def copy_stage(name: str, to: Path) -> None:
    shutil.copytree(ROOT / name, to, ignore=shutil.ignore_patterns("__pycache__"))


def test_a_stage_added_in_a_plugin_folder_runs_like_the_checkouts_own(pg, tmp_path):
    """A copy of stage 03 as plugins/06-toy-stage runs as stage 06 and pays once."""
    assert recipe("add a stage", tmp_path) == []
    copy_stage("03-claim-row", tmp_path / "06-toy-stage")
    data = run_json(tmp_path, "06", "--scenario", "staggered")
    assert (data["stage"], data["track"], data["runs"], data["duplicates"]) == \
        ("06-toy-stage", "cron", 1, 0)


def test_a_fault_added_in_a_plugin_acts_on_the_run(pg, tmp_path):
    """The restart-all fault of the recipe strikes at its time and says so in the events."""
    assert recipe("add a fault", tmp_path) == ["toy_fault.py", "restart-all.toml"]
    data = run_json(tmp_path, "03", "--scenario", str(tmp_path / "restart-all.toml"))
    faults = [(e["t"], e["detail"]) for e in data["events"] if e["event"] == "fault"]
    assert faults == [("2026-05-29T18:00:00-06:00", "restart-all: 2 replaced")]
    assert (data["runs"], data["duplicates"]) == (1, 0)


def test_a_scheduler_added_in_a_plugin_starts_a_task(pg, tmp_path):
    """The recipe's `once` scheduler starts one task process for a stage holding once.txt."""
    assert recipe("add a scheduler", tmp_path) == ["toy_scheduler.py"]
    copy_stage("04-cli-entrypoint", tmp_path / "06-once")
    (tmp_path / "06-once" / "once.txt").write_text("")
    data = run_json(tmp_path, "06", "--scenario", "staggered")
    tasks = [(e["replica"], e["detail"], e["outcome"]) for e in data["events"]
             if e["event"] == "task"]
    assert tasks == [("once-1", "python -m myapp.jobs leaderboard_close --now "
                                "2026-05-29T18:00:00-06:00", "ok")]
    assert (data["runs"], data["duplicates"]) == (1, 0)


def test_a_track_added_in_a_plugin_runs_and_shows_in_the_matrix(pg, tmp_path):
    """The recipe's toy track: two replicas, six ticks, six hellos; its own matrix."""
    assert recipe("add a track", tmp_path) == [
        "toy_track.py", "toy_track/scenarios/hello.toml", "toy/01-hello/myapp/__init__.py",
        "toy/01-hello/myapp/db.py", "toy/01-hello/myapp/models.py",
        "toy/01-hello/myapp/worker.py"]
    data = run_json(tmp_path, "toy-01")
    assert (data["stage"], data["track"], data["scenario"]) == ("toy/01-hello", "toy", "hello")
    assert (data["runs"], data["expected"], data["duplicates"], data["missed"]) == (6, 6, 0, 0)
    out = racelab("matrix", "--track", "toy", env={"RACELAB_PLUGINS": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert "toy/01-hello" in out.stdout and "cells: hellos landed" in out.stdout
