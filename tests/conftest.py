"""Shared fixtures. Every test that needs a service talks to the real PostgreSQL and Redis
racelab finds. Helpers live in tests/helpers.py."""

from __future__ import annotations

import os
import signal
import sys

import pytest
from hypothesis import HealthCheck, settings

from harness.infra import services
from tests.helpers import chromium_missing, need_chromium

settings.register_profile(
    "ci", max_examples=200, derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", max_examples=2000, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist each test process has a core to itself: the commands a test runs take
    one job (RACELAB_JOBS=1: one exploration worker, one matrix cell at a time), not one per
    core that the other test processes use too, each paying a second rig or cell to then wait
    for a core. A test of two jobs side by side sets RACELAB_JOBS itself; a value already set
    is kept."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.setdefault("RACELAB_JOBS", "1")


@pytest.fixture(scope="session")
def pg() -> services.Found:
    """The PostgreSQL the lab uses; a missing one is a failure, never a skip. One the lab
    started for this test process (nothing answered on 5432: a laptop) is handed to the
    commands the tests start, through RACELAB_POSTGRES_URL, so that a test watching the server
    (replicas connected, databases made, connections free) watches the one its command uses,
    as it does where a server answers on 5432. A test that forces RACELAB_SERVICES still gets
    a server of its command's own."""
    found = services.postgres()
    if found.how not in ("env", "local"):
        os.environ.setdefault(services.PG_ENV, found.url)
    return found



def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Without Chromium a `browser` test is skipped before its fixtures run (one line saying
    why); under CI=true it stays, and fails in need_chromium."""
    if browser_missing := chromium_missing():
        for item in items:
            if item.get_closest_marker("browser"):
                item.add_marker(pytest.mark.skip(reason=browser_missing))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Under CI=true a `browser` test without Chromium fails at once, before minutes of runs."""
    if item.get_closest_marker("browser") and not chromium_missing():
        need_chromium()


@pytest.fixture(autouse=True)
def runs_can_still_play():
    """A test that leaves this process unable to play a run (the flag that stops runs raised,
    the run databases closed as at exit) fails itself, not whichever test comes next on the
    same worker: a run there would stop at its first instant as on Ctrl-C, and pytest-xdist
    would take the worker for interrupted."""
    yield
    from harness.engine.run import fleet
    from harness.infra import rundb

    left_up = fleet.STOP.is_set()
    fleet.STOP.clear()  # the next test on this worker starts as it would alone
    assert not left_up, "this test left fleet.STOP set: later runs would stop"
    assert not rundb.closing(), "this test closed the run databases: later runs would stop"


@pytest.fixture
def own_signals():
    """A test that installs the CLI's Ctrl-C handling in its own process (harness.interrupts)
    gives the process its handlers back, and forgets the interrupt it made, when it ends."""
    from harness import interrupts
    from harness.engine.run import fleet

    saved = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM), sys.unraisablehook
    yield
    interrupts.install()  # forget the interrupt this test made
    signal.signal(signal.SIGINT, saved[0])
    signal.signal(signal.SIGTERM, saved[1])
    sys.unraisablehook = saved[2]
    fleet.STOP.clear()
