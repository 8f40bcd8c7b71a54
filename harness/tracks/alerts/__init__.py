"""The alerts track: a deduplicated alert that replicas' loops send, with Redis, a webhook and
a sandbox provider around them. Its one registration: stages under alerts/."""

from __future__ import annotations

from pathlib import Path

from harness.engine import registry
from harness.engine.tracks import Track
from harness.tracks.alerts import faults, report
from harness.tracks.alerts.world import AlertsWorld

for kind in faults.KINDS:
    registry.add_fault(kind)

TRACK = registry.add_track(Track(
    name="alerts",
    stage_dir="alerts",
    scenario_dir=Path(__file__).resolve().parent / "scenarios",
    scenario_order=("two-replicas", "deploy", "other-creator", "p0", "redis-down", "redis-slow",
                    "prune-flood", "reconcile", "redis-failover"),
    default_scenario="two-replicas",
    open_world=AlertsWorld,
    run_table=report.run_table,
    cell=report.cell,
    matrix_caption=report.MATRIX_CAPTION,
    world_keys={"low_credits": int, "services_down": str, "workspaces": str},
    findings=report.findings,
    labels={"workspaces (updated)": "workspace sync"},
))
