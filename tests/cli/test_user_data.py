"""Nothing of the user's is lost or overwritten: `racelab clean` removes only what the lab
recorded as its own (databases in its list, temp dirs with its owner file), a file the lab writes
is checked before the work and replaced whole or not at all, and no URL is printed with its
password. Tests that run `clean --all` or `clean --kept` do it on a PostgreSQL of their own and
with a TMPDIR of their own, so they see nothing of any other run."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from harness.infra import embedded, kinds, services
from tests.helpers import (
    DEADLINE_S,
    LONG_RUN,
    ROOT,
    alive,
    descendants,
    one_line_exit_2,
    racelab,
    wait_for,
)


@pytest.fixture(scope="module")
def own_pg() -> Iterator[str]:
    """A throwaway PostgreSQL for this module alone: `clean --all` there sees no other run."""
    server = embedded.start_postgres(kinds.embedded_pg_bindir() or kinds.local_pg_bindir())
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def own_tmp() -> Iterator[Path]:
    """A TMPDIR of the test's own (short: multiprocessing puts a socket path in it)."""
    path = Path(tempfile.mkdtemp(prefix="rl-"))
    try:
        yield path
    finally:
        subprocess.run(["rm", "-rf", str(path)], check=True)


def _sql(url: str, database: str, statement: str) -> list[tuple]:
    with psycopg.connect(services.libpq_url(services.app_url(url, database)),
                         autocommit=True) as conn:
        cur = conn.execute(statement)
        return cur.fetchall() if cur.description else []


def _databases(url: str) -> list[str]:
    return [r[0] for r in _sql(url, "postgres", "SELECT datname FROM pg_database WHERE datname "
                                                "LIKE 'racelab%' ORDER BY 1")]


def _on(url: str, tmp: Path) -> dict[str, str]:
    return {services.PG_ENV: url, "TMPDIR": str(tmp)}


# -- 1, 5: databases: ownership, not a name prefix ---------------------------------------------

def test_clean_all_leaves_a_users_racelab_databases_and_their_rows(own_pg, own_tmp):
    """`createdb racelab_prod` with 3 rows and `racelab_team-data` beside a database of a live
    racelab run: `clean --all` drops the lab's and leaves both of the user's, rows and all."""
    _sql(own_pg, "postgres", "CREATE DATABASE racelab_prod")
    _sql(own_pg, "postgres", 'CREATE DATABASE "racelab_team-data"')
    try:
        _sql(own_pg, "racelab_prod", "CREATE TABLE orders (id int PRIMARY KEY)")
        _sql(own_pg, "racelab_prod", "INSERT INTO orders VALUES (1), (2), (3)")
        live = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "03", "--scenario",
                                 str(_long(own_tmp))], cwd=ROOT, env={**os.environ,
                                                                      **_on(own_pg, own_tmp)},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            lab = wait_for(lambda: [d for d in _databases(own_pg)
                                    if d.startswith(f"racelab_{live.pid}_")], "the run's database")
            out = racelab("clean", "--all", env=_on(own_pg, own_tmp))
        finally:
            live.kill()
            live.wait(DEADLINE_S)
        assert out.returncode == 0, out.stderr
        assert f"removed database {lab[0]}" in out.stdout.splitlines()
        assert _databases(own_pg) == ["racelab_prod", "racelab_team-data"]
        assert _sql(own_pg, "racelab_prod", "SELECT id FROM orders ORDER BY id") == [
            (1,), (2,), (3,)]
    finally:
        _sql(own_pg, "postgres", "DROP DATABASE IF EXISTS racelab_prod WITH (FORCE)")
        _sql(own_pg, "postgres", 'DROP DATABASE IF EXISTS "racelab_team-data" WITH (FORCE)')


def test_a_kept_database_stays_through_clean_and_clean_all_until_clean_kept(own_pg, own_tmp):
    """`run --keep`: plain `clean` and `clean --all` name it kept and leave it, rows and all;
    `clean --kept` drops it."""
    out = racelab("run", "03", "--scenario", "simultaneous", "--keep", env=_on(own_pg, own_tmp))
    assert out.returncode == 0, out.stderr
    kept = out.stdout.strip().splitlines()[-1].removeprefix("kept database ")
    for args in (["clean"], ["clean", "--all"]):
        out = racelab(*args, env=_on(own_pg, own_tmp))
        assert out.returncode == 0, out.stderr
        assert f"kept database {kept} (run --keep; clean --kept removes it)" in out.stdout
        assert kept in _databases(own_pg)
    assert _sql(own_pg, kept, "SELECT count(*) FROM token_transactions") == [(3,)]
    out = racelab("clean", "--kept", env=_on(own_pg, own_tmp))
    assert out.returncode == 0, out.stderr
    assert f"removed database {kept}" in out.stdout.splitlines()
    assert kept not in _databases(own_pg)


def _long(folder: Path) -> Path:
    path = folder / "long.toml"
    path.write_text(LONG_RUN)
    return path


def test_clean_knows_a_reused_pid_and_a_database_never_made(own_pg, own_tmp):
    """The lab's list names a database whose harness pid now belongs to a later process (this
    one, started at another time) and one whose harness died before CREATE DATABASE: plain
    `clean` drops the first, forgets the second without claiming to remove it, and the list is
    empty after."""
    from harness.infra import owned

    reused = f"racelab_{os.getpid()}_{os.urandom(3).hex()}"
    owned.create(own_pg, reused)
    _sql(own_pg, owned.REGISTRY, f"UPDATE made SET started = started - 1000 WHERE name = "
                                 f"'{reused}'")
    _sql(own_pg, owned.REGISTRY, f"INSERT INTO made (name, pid, started, host) VALUES "
                                 f"('racelab_1_never', 1, 0, '{socket.gethostname()}')")
    out = racelab("clean", env=_on(own_pg, own_tmp))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"removed database {reused}"]
    assert reused not in _databases(own_pg)
    assert _sql(own_pg, owned.REGISTRY, "SELECT name FROM made") == []


# -- 13: the lab's own temp dirs, by their owner file ------------------------------------------

def _sigkill_once(proc: subprocess.Popen, ready: str, condition) -> None:
    wait_for(condition, ready)
    started = descendants(proc.pid)
    proc.kill()
    proc.wait(DEADLINE_S)
    wait_for(lambda: not [pid for pid in started if alive(pid)], "its processes to end")


@pytest.mark.xdist_group("racelab-clean")  # clean drops what any dead run left
def test_clean_removes_the_forkserver_dir_of_a_sigkilled_run_and_no_strangers(pg, own_tmp):
    """SIGKILL a run mid-tick: its multiprocessing dir (pymp-*, the forkserver's socket) is left,
    marked as the lab's; `racelab clean` removes it and leaves a stranger's pymp-* dir."""
    stranger = own_tmp / "pymp-someone-else"
    stranger.mkdir()
    (stranger / "listener-1").write_text("")
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "03", "--scenario",
                             str(_long(own_tmp))], cwd=ROOT, env={**os.environ,
                                                                  "TMPDIR": str(own_tmp)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _sigkill_once(proc, "3 replicas connected", lambda: _sql(
        pg.url, "postgres", "SELECT count(DISTINCT application_name) FROM pg_stat_activity "
        f"WHERE application_name LIKE 'racelab:{proc.pid}_%' HAVING count(DISTINCT "
        "application_name) = 3"))
    left = sorted(p for p in own_tmp.glob("pymp-*") if p != stranger)
    assert len(left) == 1
    out = racelab("clean", env={"TMPDIR": str(own_tmp)})
    assert out.returncode == 0, out.stderr
    assert f"removed temp dir {left[0]}" in out.stdout.splitlines()
    assert sorted(own_tmp.glob("pymp-*")) == [stranger]


@pytest.mark.xdist_group("racelab-clean")  # clean drops what any dead run left
def test_clean_removes_the_hypothesis_dir_of_a_sigkilled_find_race(pg, own_tmp):
    """SIGKILL find-race mid-search: its racelab-hypothesis-* dir is left; `racelab clean`
    removes it."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "find-race", "01",
                             "--max-examples", "1000", "--out", str(own_tmp / "race.toml")],
                            cwd=ROOT, env={**os.environ, "TMPDIR": str(own_tmp)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _sigkill_once(proc, "the search's first runs", lambda: list(
        own_tmp.glob("racelab-hypothesis-*")) and _sql(
        pg.url, "postgres", "SELECT 1 FROM pg_stat_activity WHERE application_name LIKE "
        f"'racelab:{proc.pid}_%'"))
    left = list(own_tmp.glob("racelab-hypothesis-*"))
    assert len(left) == 1
    out = racelab("clean", env={"TMPDIR": str(own_tmp)})
    assert out.returncode == 0, out.stderr
    assert f"removed temp dir {left[0]}" in out.stdout.splitlines()
    assert list(own_tmp.glob("racelab-hypothesis-*")) == []


# -- 15: no password printed -------------------------------------------------------------------

def test_services_and_errors_print_urls_without_their_passwords(pg):
    """A password in RACELAB_POSTGRES_URL and RACELAB_REDIS_URL: `racelab services` shows each
    URL with *** for it, and the error for an unreachable server (a wrong password's echo
    included) never shows it either."""
    secret = "s3cret-Pa55"
    with_password = pg.url.replace("://postgres@", f"://postgres:{secret}@")
    assert secret in with_password
    redis_url = os.environ.get(services.REDIS_ENV) or services.redis().url
    env = {services.PG_ENV: with_password,
           services.REDIS_ENV: redis_url.replace("redis://", f"redis://:{secret}@")}
    out = racelab("services", env=env)
    assert out.returncode == 0, out.stderr
    assert secret not in out.stdout + out.stderr
    assert [line.split(" · ")[2] for line in out.stdout.splitlines()] == [
        with_password.replace(secret, "***"), env[services.REDIS_ENV].replace(secret, "***")]
    for variable, url in ((services.PG_ENV, f"postgresql://u:{secret}@127.0.0.1:1/x"),
                          (services.REDIS_ENV, f"redis://u:{secret}@127.0.0.1:1/0"),
                          (services.PG_ENV, f"postgresql://u:{secret}@[bad")):
        out = racelab("services", env={variable: url})
        one_line_exit_2(out, variable, "u:***@", stdout=None)
        assert secret not in out.stdout + out.stderr
