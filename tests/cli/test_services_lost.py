"""PostgreSQL stopped in the middle of a run: one line, exit 2, and with --json an object with
an `error` key, never an internal error (issue 19, finding 9). The server stopped is the
throwaway embedded one the run started for itself."""

from __future__ import annotations

import json
import os
import signal

import pytest

from tests.helpers import DEADLINE_S, alive, descendants, start_embedded_long_run, wait_for

LOST = "racelab: PostgreSQL stopped answering while the command ran"


@pytest.mark.parametrize("args", [(), ("--json",)])
def test_postgresql_stopped_mid_run_is_one_line_and_exit_2(tmp_path, args):
    """A fast shutdown (SIGINT to the postmaster) with 3 replicas connected: exit 2, one line
    naming PostgreSQL; --json prints {"error": that line}; no replica is left."""
    proc, _, postmaster = start_embedded_long_run(tmp_path, *args)
    replicas = sorted(descendants(proc.pid) - descendants(postmaster) - {postmaster})
    os.kill(postmaster, signal.SIGINT)
    out, err = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 2, err
    lines = [x for x in err.strip().splitlines() if "ticks/s this run takes" not in x]
    assert len(lines) == 1 and lines[0].startswith(LOST), err  # beside the estimate, one line
    if args:
        assert json.loads(out) == {"error": lines[0].removeprefix("racelab: ")}
    wait_for(lambda: not [pid for pid in replicas if alive(pid)], "the replicas to exit")
