"""Shared fixtures. Every test that needs a service talks to the real PostgreSQL and Redis
racelab finds. Helpers live in tests/helpers.py."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from harness.infra import services

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
