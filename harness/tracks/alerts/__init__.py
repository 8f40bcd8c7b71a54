"""The alerts track: a deduplicated alert that replicas' loops send, with Redis, a webhook and
a sandbox provider around them. Its one registration: stages under alerts/."""

from __future__ import annotations

from pathlib import Path

from harness.engine.model import registry
from harness.engine.model.tracks import SeamRules, Track
from harness.tracks.alerts import faults, report
from harness.tracks.alerts.world import AlertsWorld

TRACK = registry.add_track(Track(
    name="alerts",
    stage_dir="alerts",
    home=Path(__file__).resolve().parent,
    default_scenario="two-replicas",
    scenario_order=("two-replicas", "incident", "deploy", "other-creator", "p0", "redis-down",
                    "redis-slow", "prune-flood", "reconcile", "redis-failover", "overlap"),
    open_world=AlertsWorld,
    report=report,
    faults=faults.KINDS,
    world_keys={"low_credits": int, "services_down": (str, 64), "workspaces": (str, 64)},
    seams=SeamRules(hooks="harness.tracks.alerts.hooks"),  # and step mode's Redis holds
    steppable=True,  # its stages share PostgreSQL and Redis: step mode holds before both
))
