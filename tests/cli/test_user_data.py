"""Nothing of the user's is lost or overwritten: `racelab clean` removes only what the lab
recorded as its own (databases in its list, temp dirs with its owner file), a file the lab writes
is checked before the work and replaced whole or not at all, and no URL is printed with its
password. Tests that run `clean --all` or `clean --kept` do it on a PostgreSQL of their own and
with a TMPDIR of their own, so they see nothing of any other run."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from harness import writes
from harness.infra import embedded, kinds, services
from tests.helpers import (
    DEADLINE_S,
    LONG_RUN,
    ROOT,
    alive,
    descendants,
    one_line_exit_2,
    racelab,
    racelab_here,
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


# -- 2, 3, 4: files: checked first, written whole, never through a symlink ---------------------

UNREACHABLE = {services.PG_ENV: "postgresql://postgres@127.0.0.1:1/postgres"}


@pytest.fixture(scope="module")
def previous_page(tmp_path_factory) -> bytes:
    """A page the lab wrote, marked as its own (so a new report may replace it): yesterday's,
    the user's to keep. What it shows does not matter here, only that it stays byte for byte;
    a whole report to make it took 20 s of the suite."""
    page = writes.Target(tmp_path_factory.mktemp("previous") / "index.html", "--html")
    return page.write("<!doctype html>\n<title>racelab report</title>\n<p>yesterday's runs</p>\n"
                      ).read_bytes()


def _with_page(folder: Path, page: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index.html").write_bytes(page)
    return folder


def test_a_report_without_postgresql_leaves_the_previous_page_and_makes_no_folder(
        previous_page, tmp_path):
    """PostgreSQL unreachable: exit 2, DIR/index.html byte for byte as before, nothing else in
    DIR, and a DIR that did not exist is not made."""
    folder = _with_page(tmp_path / "report", previous_page)
    out = racelab("report", "--html", str(folder), "--stage", "00", env=UNREACHABLE)
    one_line_exit_2(out, "unreachable", stdout=None)
    assert (folder / "index.html").read_bytes() == previous_page
    assert [p.name for p in folder.iterdir()] == ["index.html"]
    missing = tmp_path / "never"
    one_line_exit_2(racelab("report", "--html", str(missing), "--stage", "00", env=UNREACHABLE),
                    "unreachable", stdout=None)
    assert missing.exists() is False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL],
                         ids=["SIGINT", "SIGTERM", "SIGKILL"])
def test_an_interrupted_report_leaves_the_previous_page(sig, previous_page, own_pg, own_tmp,
                                                        tmp_path):
    """A signal while the report's first runs are under way: DIR/index.html is byte for byte
    the previous page, and no temp file is left beside it."""
    folder = _with_page(tmp_path / "report", previous_page)
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "report", "--html", str(folder),
                             "--stage", "00"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, **_on(own_pg, own_tmp)})
    wait_for(lambda: _sql(own_pg, "postgres", "SELECT 1 FROM pg_stat_activity WHERE "
                                              f"application_name LIKE 'racelab:{proc.pid}_%'"),
             "a replica of the report's first run to connect")
    started = descendants(proc.pid)
    os.kill(proc.pid, sig)
    proc.wait(DEADLINE_S)
    wait_for(lambda: not [pid for pid in started if alive(pid)], "the report's processes to end")
    assert (folder / "index.html").read_bytes() == previous_page
    assert [p.name for p in folder.iterdir()] == ["index.html"]
    assert racelab("clean", env=_on(own_pg, own_tmp)).returncode == 0  # what a SIGKILL left


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "elsewhere" / "notes.txt"
    outside.parent.mkdir()
    outside.write_text("the user's notes\n")
    return outside


SYMLINKED = {  # command, the path it writes (relative to the test's folder)
    "report": (["report", "--html", "{dir}", "--stage", "00"], "index.html"),
    "run-svg": (["run", "00", "--svg", "{dir}/run.svg"], "run.svg"),
    "run-html": (["run", "00", "--html", "{dir}/run.html"], "run.html"),
    "matrix-svg": (["matrix", "--stage", "00", "--svg", "{dir}/matrix.svg"], "matrix.svg"),
    "find-race-out": (["find-race", "01", "--out", "{dir}/race.toml"], "race.toml"),
}


@pytest.mark.parametrize("case", list(SYMLINKED))
def test_a_symlink_where_the_lab_writes_is_refused_and_its_target_untouched(case, tmp_path):
    """A symlink at the path a command would write (DIR/index.html, --svg, run --html, --out)
    pointing out of the folder: one line naming it, exit 2, before any run; the file it points
    to is as it was, and the link is still a link."""
    args, name = SYMLINKED[case]
    folder = tmp_path / "out"
    folder.mkdir()
    outside = _outside(tmp_path)
    (folder / name).symlink_to(outside)
    out = racelab_here(*[a.format(dir=folder) for a in args])
    one_line_exit_2(out, str(folder / name), "symlink")
    assert outside.read_text() == "the user's notes\n"
    assert (folder / name).is_symlink()


def test_find_race_leaves_a_users_race_file_and_checks_out_before_any_service(tmp_path):
    """`find-race 01` in a folder holding the user's own race-01.toml: one line, exit 2, the
    file as it was. An --out that cannot be written is refused before the search even looks
    for PostgreSQL (here unreachable, which would be the first thing a search meets)."""
    mine = tmp_path / "race-01.toml"
    mine.write_text('name = "mine"\n')
    out = racelab("find-race", "01", "--max-examples", "5", cwd=tmp_path)
    one_line_exit_2(out, "race-01.toml", "racelab did not write this file", "--force")
    assert mine.read_text() == 'name = "mine"\n'
    for bad, why in ((tmp_path / "no-such-folder" / "race.toml", "no folder"),
                     (Path("/proc/racelab.toml"), "cannot write")):
        out = racelab("find-race", "01", "--out", str(bad), env=UNREACHABLE)
        one_line_exit_2(out, "--out", str(bad), why)


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
    user = urlsplit(pg.url).username or "postgres"
    with_password = pg.url.replace(f"://{user}@", f"://{user}:{secret}@")
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


@pytest.mark.parametrize("url", [
    "postgresql://admin@127.0.0.1:1/postgres?password={s}",
    "postgresql://admin@127.0.0.1:1/postgres?sslmode=disable&password={s}&connect_timeout=2",
    "postgresql://admin:r3d@{s}@127.0.0.1:1/postgres",
    "host=127.0.0.1 port=1 user=admin password={s} dbname=postgres",
    "host=127.0.0.1 port=1 password='{s} with spaces' dbname=postgres",
    "redis://127.0.0.1:1/0?password={s}",
    "redis://:r3d@{s}@127.0.0.1:1/0",
])
def test_every_form_of_a_password_a_url_can_carry_is_masked(url):
    """A URL parameter, a raw @ inside the password, a libpq key=value string (quoted or not),
    on either service: the one line an unreachable or unreadable URL gets, and its --json
    error, name the variable and never the password."""
    secret = "s3cr3tPW"
    variable = services.REDIS_ENV if url.startswith("redis") else services.PG_ENV
    commands = [("services",)] + ([("run", "00", "--json")] if variable == services.PG_ENV
                                   else [])
    for command in commands:
        out = racelab(*command, env={variable: url.format(s=secret)})
        one_line_exit_2(out, variable, stdout=None)
        assert secret not in out.stdout + out.stderr, out.stdout + out.stderr
    assert secret not in services.masked(url.format(s=secret))
