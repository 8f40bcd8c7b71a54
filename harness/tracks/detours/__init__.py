"""The detours track: what teams try instead of the claim row, each a copy of a cron stage with
one alternative written as teams write it (detours/NN-name): a Redis lock (redis-py's own
`Lock`), each beside its twin with stage 03's claim row beneath. It runs some of the cron
track's scenarios (borrowed as they are) and its own failover, and counts with the cron
checker, from the same tables, so its cells read like the cron matrix's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from harness.engine.model import registry
from harness.engine.model.scenario import Scenario
from harness.engine.model.tracks import Track
from harness.tracks.cron import TRACK as CRON
from harness.tracks.detours import faults, report
from harness.tracks.detours.world import DetourWorld

TRACK_NAME = "detours"
BORROWED = ("simultaneous", "staggered", "deploy-restart", "pause", "replica-lag")


def _borrow(found: list[Scenario]) -> list[Scenario]:
    """The cron scenarios a detour answers to, as they are (same times, same faults)."""
    return [replace(s, track=TRACK_NAME) for s in found
            if s.track == CRON.name and s.name in BORROWED]


TRACK = registry.add_track(Track(
    name=TRACK_NAME,
    stage_dir="detours",  # detours/01-redis-lock, detours/02-redis-lock-claim-row, …
    home=Path(__file__).resolve().parent,
    scenario_order=(*BORROWED, "pause-at-begin", "failover"),
    default_scenario="staggered",
    open_world=DetourWorld,
    report=report,
    faults=faults.KINDS,
    seams=replace(CRON.seams, hooks="harness.tracks.detours.hooks"),  # its Redis lock
    borrow_scenarios=_borrow,
    connections_per_replica=2,  # the app's pool, and the elected leader's lease connection
))
