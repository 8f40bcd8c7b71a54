"""The bench says of each figure with a target whether this sitting met it."""

from __future__ import annotations

import json

from harness import bench
from tests.helpers import ROOT


def test_met_says_yes_or_no_against_each_target_and_nothing_without_one():
    """A harness at 800 ticks/s beside 1,300 in-process misses ≤ 10 %; 23 s meets the demo's
    30 s; 0 duplicates and sub-linear growth meet the scaling target; no target, no verdict."""
    data = json.loads((ROOT / "docs" / "bench.json").read_text())
    data |= {"stage_inprocess_ticks_per_s": 1300.0, "harness_ticks_per_s": 800.0,
             "demo_wall_s": 23.0, "week_wall_s": {"03": 2.5, "05": 6.5}}
    assert bench.met("harness_ticks_per_s", data) == "no"
    assert bench.met("demo_wall_s", data) == "yes"
    assert bench.met("week_wall_s", data) == "no"
    assert bench.met("raw_claim_tx_per_s", data) == ""
    data["scaling"] = [{"replicas": 3, "wall_s": 0.1, "duplicates": 0},
                       {"replicas": 50, "wall_s": 1.0, "duplicates": 0}]
    assert bench.met("scaling", data) == "yes"
    data["scaling"][1]["duplicates"] = 1
    assert bench.met("scaling", data) == "no"
