"""A track whose stages need libraries racelab was installed without says so before any run."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.engine import registry, runner, scenario, stages
from harness.errors import UserError


def test_a_peer_run_without_its_library_is_one_line_naming_make_setup(monkeypatch):
    """After `make demo`'s light install the peer libraries are missing: a peers run stops with
    a UserError (exit 2 in the CLI) naming the module and `make setup`, before any database or
    process exists."""
    peers = registry.track("peers")
    monkeypatch.setitem(registry.tracks(), "peers",
                        replace(peers, requires=("racelab_no_such_library",)))
    stage = stages.resolve("peers-01")
    with pytest.raises(UserError, match="racelab_no_such_library.*make setup"):
        runner.run(stage, scenario.resolve("staggered", "peers"))


def test_the_peers_track_counts_two_connections_per_replica():
    """The peers' replicas open the app's pool and the library's own: the connection check
    counts two for each, the lab's own stages one."""
    assert registry.track("peers").connections_per_replica == 2
    assert registry.track("cron").connections_per_replica == 1
