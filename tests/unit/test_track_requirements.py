"""A track whose stages need libraries racelab was installed without says so before any run."""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from harness.engine.model import registry, scenario, stages
from harness.engine.run import runner
from harness.errors import UserError
from tests.helpers import ROOT


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


# What racelab itself installs (pyproject's dependencies): a peer may use these freely.
CORE = {"sqlalchemy", "psycopg", "redis", "rich", "hypothesis", "psutil"}
_CLASS_PATH = re.compile(r"^([a-z_]\w*)(?:\.[a-z_]\w*)*\.[A-Z]\w*$")  # "pkg.mod.Class"


def _named_modules(folder: Path) -> set[str]:
    """The top-level modules a peer's code imports, or names in a class path string (such as
    Celery's `beat_scheduler = "redbeat.RedBeatScheduler"`), that are not its own or stdlib."""
    names = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
            elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and (m := _CLASS_PATH.match(node.value))):
                names.add(m.group(1))
    return names - set(sys.stdlib_module_names) - {"myapp"}


def test_every_library_a_peer_names_is_one_the_peers_track_requires():
    """A peers run checks `requires` before anything starts, so a missing library is one line
    naming `make setup` (exit 2): that holds only if every library a peer uses is listed."""
    peers = registry.track("peers")
    for folder in sorted((ROOT / "peers").glob("[0-9][0-9]-*")):
        assert _named_modules(folder) - CORE - set(peers.requires) == set(), folder.name


def test_the_lab_s_tracks_come_in_catalogue_order_whichever_module_was_imported_first():
    """A caller that imports the alerts and peers tracks before anything asks the registry
    (as a test module does) still gets cron first: the default track of `matrix` and the
    order of every list, in a fresh interpreter."""
    import subprocess

    code = ("import harness.tracks.peers, harness.tracks.alerts\n"
            "from harness.engine.model import registry\n"
            "print(' '.join(registry.tracks()))\n"
            "print(registry.schedulers()[0].name)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "cron alerts peers detours project"
    assert out[1] == "EventBridge Scheduler"
