"""Where there is no prctl (macOS's way, taken here on Linux with it switched off): a server
the harness started and a Python child of the harness still die with it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import psutil

from harness.infra import kinds
from tests.helpers import DEADLINE_S, ROOT, alive, wait_for

EMBEDDED = {kinds.SERVICES_ENV: "embedded"}


KEEPER_SCRIPT = textwrap.dedent("""
    import sys, time
    from harness.infra import procs
    procs.USE_PRCTL = False  # the way a macOS machine goes: a keeper, not the kernel
    from harness.infra import redis_server
    server = redis_server.start_redis_server()
    print(server.process.pid, server.keeper.proc.pid, server.workdir, flush=True)
    time.sleep(120)
""")


def test_without_prctl_a_keeper_ends_the_embedded_redis_when_the_harness_is_killed():
    """With the parent-death signal switched off (as on macOS), SIGKILL of the harness still
    ends its valkey-server: the keeper sees the harness's pipe close and stops it."""
    harness = subprocess.Popen([sys.executable, "-c", KEEPER_SCRIPT], cwd=ROOT,
                               stdout=subprocess.PIPE, text=True, env={**os.environ, **EMBEDDED})
    server, keeper, workdir = harness.stdout.readline().split()
    server, keeper = int(server), int(keeper)
    assert psutil.Process(server).name() == "valkey-server"
    assert (alive(server), alive(keeper)) == (True, True)
    harness.kill()
    harness.wait(DEADLINE_S)
    wait_for(lambda: not alive(server), "the keeper to end the valkey-server")
    wait_for(lambda: not alive(keeper), "the keeper to exit")
    shutil.rmtree(workdir)  # what `racelab clean` does for a killed harness (tests/cli)


WATCH_SCRIPT = textwrap.dedent("""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c",
        "import time; from harness.infra import procs; procs.USE_PRCTL = False; "
        "procs.die_with_parent(); print('watching', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "watching\\n"
    print(child.pid, flush=True)
    time.sleep(120)
""")


def test_without_prctl_a_python_child_exits_when_its_parent_is_killed():
    """A replica's parent watch, the way it runs without prctl: its thread sees the parent
    gone and the child exits."""
    parent = subprocess.Popen([sys.executable, "-c", WATCH_SCRIPT], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert alive(child) is True
    parent.kill()
    parent.wait(DEADLINE_S)
    wait_for(lambda: not alive(child), "the child to notice its parent is gone")
