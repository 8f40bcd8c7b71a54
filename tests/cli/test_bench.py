"""`racelab bench --json`: one object with the figures the performance targets are judged by.

Only the shape and the counts are checked here, never a timing: the machine is shared and
timings are the reader's to judge.
"""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from harness import bench
from tests.helpers import ROOT, racelab

NUMBERS = ("raw_claim_tx_per_s", "stage_inprocess_ticks_per_s", "harness_ticks_per_s",
           "time_compression", "replica_start_ms", "restart_ms", "stage_row_wall_s",
           "demo_wall_s", "property_examples_per_s", "pipe_rtt_us", "step_us", "step_handoff_us",
           "schedules_per_s", "explore_wall_s", "reduced_wall_s")
COUNTS = ("explore_schedules", "reduced_schedules")


def _check_shape(data: dict) -> None:
    for key in NUMBERS:
        assert isinstance(data[key], float) and data[key] > 0, key
    assert set(data["week_wall_s"]) == {"03", "05"}
    assert all(isinstance(v, float) and v > 0 for v in data["week_wall_s"].values())
    for s in data["scaling"]:
        assert isinstance(s["wall_s"], float) and s["wall_s"] > 0
        assert s["duplicates"] == 0  # stage 03 pays once however many replicas
    machine = data["machine"]
    assert isinstance(machine["host"], str) and machine["cpus"] >= 1
    assert set(data["targets"]) == {*NUMBERS, *COUNTS, "week_wall_s", "scaling"}
    assert 0 < data["reduced_schedules"] < data["explore_schedules"]


@pytest.mark.slow
def test_bench_json_is_one_object_with_every_figure_and_the_table_shows_each_target(pg):
    out = racelab("bench", "--quick", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    _check_shape(data)
    assert data["quick"] is True and data["week_days"] == 1
    assert [s["replicas"] for s in data["scaling"]] == [3, 10]

    console = Console(width=200, record=True)
    console.print(bench.table(data))
    lines = console.export_text().splitlines()
    for key, target in data["targets"].items():
        row = next(line for line in lines if line.strip().startswith(f"│ {key} "))
        assert (target or "—") in row, key


def test_readme_performance_section_is_the_committed_full_bench():
    """The README's figures are docs/bench.json (a full `racelab bench --json`, written with
    it by `make perf-readme`), rendered, not typed."""
    data = json.loads((ROOT / "docs" / "bench.json").read_text())
    _check_shape(data)
    assert data["quick"] is False and data["week_days"] == 7
    assert [s["replicas"] for s in data["scaling"]] == [3, 10, 25, 50]
    readme = (ROOT / "README.md").read_text()
    section = readme.split("<!-- perf:start -->\n")[1].split("<!-- perf:end -->")[0]
    assert section == bench.markdown(data)
