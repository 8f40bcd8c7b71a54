"""Shared fixtures. Every test talks to the real PostgreSQL and Redis racelab finds."""

from __future__ import annotations

import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from harness import runner, scenario, services, stages

ROOT = Path(__file__).resolve().parent.parent

settings.register_profile(
    "ci", max_examples=200, derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", max_examples=2000, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def pg() -> services.Found:
    """The PostgreSQL the lab uses; a missing one is a failure, never a skip."""
    return services.postgres()


@cache
def run(stage: str, scenario_name: str, seed: int | None = None) -> runner.RunResult:
    """One run of a canonical scenario; the same (stage, scenario, seed) replays the same run,
    so it is run once per session and shared by the tests that read it (results are frozen)."""
    sc = scenario.resolve(scenario_name)
    if seed is not None:
        sc = sc.with_seed(seed)
    return runner.run(stages.resolve(stage), sc)


def racelab(*args: str, env: dict | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the CLI as a user would, in a separate process."""
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
        timeout=timeout, cwd=ROOT, env={**os.environ, **(env or {})},
    )
