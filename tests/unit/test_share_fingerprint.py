"""An exploration's fingerprint (issue 42, item 7): shares of the same stage and scenario names
but other code, another scenario or another racelab do not merge into one tree."""

from __future__ import annotations

import shutil

import pytest

from harness.engine.explore.outcomes import fingerprint, merge
from harness.errors import UserError
from tests.helpers import ROOT


def test_the_fingerprint_follows_the_code_and_the_scenario_not_the_bytecode(tmp_path):
    stage = tmp_path / "08-you-are-the-scheduler"
    shutil.copytree(ROOT / "02-thread-sentinel", stage)
    before = fingerprint(stage, "name = 'simultaneous'\n")
    assert len(before) == 16 and int(before, 16) >= 0
    cache = stage / "myapp" / "__pycache__"
    cache.mkdir(exist_ok=True)
    (cache / "worker.cpython-311.pyc").write_bytes(b"compiled")
    assert fingerprint(stage, "name = 'simultaneous'\n") == before
    assert fingerprint(stage, "name = 'simultaneous'\nseed = 8\n") != before
    worker = stage / "myapp" / "worker.py"
    worker.write_text(worker.read_text().replace("if not got_lock:", "if False:"))
    assert fingerprint(stage, "name = 'simultaneous'\n") != before


def test_shares_with_different_fingerprints_do_not_merge():
    share = {"stage": "02-thread-sentinel", "scenario": "simultaneous", "replicas": 3,
             "strategy": "dfs", "fingerprint": "a" * 16, "partition": [1, 2], "cut": "c",
             "preemptions": 1, "outcomes": [], "explored": [], "schedules": 0,
             "first_bad_at": None, "complete": True, "reruns": 0, "unreached": [],
             "seconds": 1.0}
    other = {**share, "partition": [2, 2], "fingerprint": "b" * 16}
    with pytest.raises(UserError, match="ran different code, scenarios or racelab versions"):
        merge([share, other])
    assert merge([share, {**share, "partition": [2, 2]}])["fingerprint"] == "a" * 16
