"""What the lab promises about itself: it leaves nothing behind, runs side by side, writes only
where it created, fits PostgreSQL's connections, survives database faults, and answers bad
input with one line. One named test (or a few) per promise; docs/PROMISES.md lists them."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from harness.engine.model import limits, scenario, stages
from harness.engine.run import runner
from harness.engine.views import tables
from harness.infra import cleanup, rundb, services
from tests.helpers import (
    DEADLINE_S,
    LONG_RUN,
    ROOT,
    alive,
    descendants,
    one_line_exit_2,
    racelab,
    racelab_here,
    racelab_json,
    wait_for,
)


def _admin(pg: services.Found) -> psycopg.Connection:
    return psycopg.connect(services.libpq_url(pg.url), autocommit=True)


def _databases(conn: psycopg.Connection, like: str) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT datname FROM pg_database WHERE datname LIKE %s ORDER BY 1", (like,))]


def _racelab_with_pid(*args: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess,
                                                                    int]:
    """Like `racelab`, also giving the harness pid (its run databases are named after it)."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(args, proc.returncode, out, err), proc.pid


# -- 1. No orphans -------------------------------------------------------------------------------

@pytest.mark.xdist_group("racelab-clean")  # clean drops what any dead run left
def test_sigkill_of_the_harness_leaves_no_process_and_clean_drops_only_its_database(pg, tmp_path):
    """SIGKILL the harness mid-run: every process it started dies, and `racelab clean` drops
    the database it left while a live run's database and any other database stay."""
    scenario_file = tmp_path / "long.toml"
    scenario_file.write_text(LONG_RUN)
    live = f"racelab_{os.getpid()}_{secrets.token_hex(3)}"  # this test process is alive
    with _admin(pg) as conn:
        conn.execute(f'CREATE DATABASE "{live}"')
        try:
            proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "03",
                                     "--scenario", str(scenario_file)], cwd=ROOT,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            like = f"racelab:{proc.pid}_%"
            wait_for(lambda: conn.execute(
                "SELECT count(DISTINCT application_name) FROM pg_stat_activity "
                "WHERE application_name LIKE %s", (like,)).fetchone()[0] == 3,
                "3 replicas connected")
            started = descendants(proc.pid)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(DEADLINE_S)
            wait_for(lambda: not [pid for pid in started if alive(pid)],
                      "the replicas, forkserver and resource tracker to exit")
            left = _databases(conn, f"racelab\\_{proc.pid}\\_%")
            assert len(started) == 5  # forkserver, resource tracker, replicas A, B and C
            assert len(left) == 1
            out = racelab("clean")
            assert out.returncode == 0, out.stderr
            assert f"removed database {left[0]}" in out.stdout.splitlines()
            assert _databases(conn, f"racelab\\_{proc.pid}\\_%") == []
            assert _databases(conn, live) == [live]
            assert _databases(conn, "postgres") == ["postgres"]
        finally:
            conn.execute(f'DROP DATABASE IF EXISTS "{live}"')


@pytest.mark.xdist_group("racelab-clean")  # clean drops what any dead run left
def test_clean_removes_the_temp_dir_of_a_redis_server_whose_harness_was_killed():
    """A harness SIGKILLed while it runs a throwaway redis-server: the server dies with it and
    `racelab clean` removes the temp dir it could not."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; from harness.infra.redis_server import "
         "start_redis_server; s = start_redis_server(); "
         "print(s.process.pid, s.workdir, flush=True); sys.stdin.read()"],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid, workdir = child.stdout.readline().split()
    assert json.loads((Path(workdir) / cleanup.OWNER_FILE).read_text())["owner"] == child.pid
    child.kill()
    child.wait(DEADLINE_S)
    wait_for(lambda: not alive(int(pid)), "the redis-server to die with its harness")
    out = racelab("clean")
    assert out.returncode == 0, out.stderr
    assert f"removed temp dir {workdir}" in out.stdout.splitlines()
    assert Path(workdir).exists() is False


def test_exception_mid_run_stops_the_replicas_and_drops_the_database(pg, monkeypatch):
    """A bug of the lab's own raised mid-run still stops every replica and drops the database."""
    started: list[int] = []
    real_instant = runner.Fleet._instant

    def failing_instant(self, t, batch):
        started.extend(r.proc.pid for r in self.replicas.values())
        real_instant(self, t, batch)
        raise RuntimeError("a bug in the harness")

    monkeypatch.setattr(runner.Fleet, "_instant", failing_instant)
    monkeypatch.setattr(runner, "new_run_id", lambda: f"{os.getpid()}_{secrets.token_hex(3)}")
    used: list[str] = []
    real_acquire = rundb.acquire
    monkeypatch.setattr(rundb, "acquire", lambda *a, **k: used.append(real_acquire(*a, **k))
                        or used[-1])
    with pytest.raises(RuntimeError, match="a bug in the harness"):
        runner.run(stages.resolve("03"), scenario.resolve("staggered"))
    assert len(started) == 3
    wait_for(lambda: not [pid for pid in started if alive(pid)], "the replicas to exit")
    with _admin(pg) as conn:  # this process may hold emptied databases of earlier runs
        left = _databases(conn, f"racelab\\_{os.getpid()}\\_%")
    assert len(used) == 1 and used[0] not in left
    assert left == rundb.held()


# -- 2. Isolation ------------------------------------------------------------------------------

COUNTED = ("slots", "coins", "runs", "expected", "duplicates", "missed", "partial")
SIDE_BY_SIDE = [("01", "staggered"), ("00", "simultaneous")]


def _counts(stdout: str) -> dict:
    data = racelab_json(stdout)
    return {key: data[key] for key in COUNTED}


def test_two_runs_at_once_count_the_same_as_each_alone(pg):
    """Two `racelab run` at the same time on one PostgreSQL give exactly their solo counts."""
    alone = []
    for stage, name in SIDE_BY_SIDE:
        out = racelab("run", stage, "--scenario", name, "--json")
        assert out.returncode == 0, out.stderr
        alone.append(_counts(out.stdout))
    procs = [subprocess.Popen([sys.executable, "-m", "harness.cli", "run", stage, "--scenario",
                               name, "--json"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for stage, name in SIDE_BY_SIDE]
    together = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        together.append(_counts(out))
    assert together == alone
    assert [(c["runs"], c["coins"]["paid"]) for c in together] == [(3, 90), (3, 90)]


# -- 3. Safety ---------------------------------------------------------------------------------

def test_run_pointed_at_an_existing_database_never_writes_into_it(pg):
    """RACELAB_POSTGRES_URL naming a database with a sentinel table: the run works beside it,
    the table keeps its 3 rows and is the database's only table, and no run database remains."""
    given = f"sentinel_{secrets.token_hex(3)}"
    with _admin(pg) as admin:
        admin.execute(f'CREATE DATABASE "{given}"')
        try:
            url = services.app_url(pg.url, given)
            with psycopg.connect(services.libpq_url(url), autocommit=True) as conn:
                conn.execute("CREATE TABLE sentinel (id int PRIMARY KEY, note text)")
                conn.execute("INSERT INTO sentinel VALUES (1, 'a'), (2, 'b'), (3, 'c')")
                before = conn.execute("SELECT * FROM sentinel ORDER BY id").fetchall()
            env = {services.PG_ENV: services.libpq_url(url)}
            out, pid = _racelab_with_pid("run", "03", "--scenario", "staggered", "--json",
                                         env=env)
            assert out.returncode == 0, out.stderr
            assert racelab_json(out)["runs"] == 1
            with psycopg.connect(services.libpq_url(url), autocommit=True) as conn:
                assert conn.execute("SELECT * FROM sentinel ORDER BY id").fetchall() == before
                tables = conn.execute("SELECT table_schema, table_name FROM "
                                      "information_schema.tables WHERE table_schema NOT IN "
                                      "('pg_catalog', 'information_schema')").fetchall()
                assert tables == [("public", "sentinel")]
            assert _databases(admin, given) == [given]
            assert _databases(admin, f"racelab\\_{pid}\\_%") == []
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{given}" WITH (FORCE)')


# -- 4. Connections ----------------------------------------------------------------------------

def test_fifty_replicas_fit_the_default_max_connections_and_pay_once(pg):
    """`racelab run 03 --replicas 50` under staggered ticks (a minute apart, A…O, then again
    from 18:00: three or four at each minute) connects 50 replicas and pays the slot once."""
    out = racelab("run", "03", "--scenario", "staggered", "--replicas", "50", "--json")
    assert out.returncode == 0, out.stderr
    data = racelab_json(out)
    ticks = [e for e in data["events"] if e["event"] == "tick"]
    assert (data["replicas"], len(ticks)) == (50, 50)
    assert {e["outcome"] for e in ticks} == {"ok"}
    assert (data["runs"], data["duplicates"], data["missed"]) == (1, 0, 0)
    assert data["coins"] == {"expected": 30, "paid": 30}


def test_more_replicas_than_free_connections_stop_before_anything_starts(pg):
    """A replica count the server cannot take is one line naming max_connections and the
    numbers, exit 2, and no database is created."""
    replicas = limits.MAX_REPLICAS  # the most the CLI takes; the server is made too small for it
    need = replicas * runner.POOL_PER_REPLICA + runner.HARNESS_CONNECTIONS
    limit, used = services.max_connections(pg.url)
    margin = 10  # another test's connections may close meanwhile: still too few
    held = [_admin(pg) for _ in range(max(0, limit - used - need + 1 + margin))]
    try:
        out, pid = _racelab_with_pid("run", "03", "--replicas", str(replicas))
    finally:
        for conn in held:
            conn.close()
    one_line_exit_2(out, "max_connections", f"is {limit}",
                    f"{replicas} replicas × {runner.POOL_PER_REPLICA} pooled connection",
                    f"need {need}", stdout=None)
    with _admin(pg) as conn:
        assert _databases(conn, f"racelab\\_{pid}\\_%") == []


# -- 5. Database faults ------------------------------------------------------------------------

TERMINATE_FIRST = {
    "name": "terminate-first", "replicas": 3, "interval": "15m",
    "start": "2026-05-29T18:00:00-06:00", "end": "2026-05-29T18:30:00-06:00",
    "offsets": ["0s", "1m", "2m"],
    "faults": [{"kind": "terminate-backend", "at": "2026-05-29T18:00:00-06:00",
                "replica": "A"}],
}


def test_terminated_backend_is_an_unknown_outcome_and_stage_03_still_pays_once(pg):
    """pg_terminate_backend on A inside its first transaction: A's tick is unknown, not a lab
    error; B pays the slot once after it; A's same process ticks fine at 18:15."""
    result = runner.run(stages.resolve("03"), scenario.from_dict(TERMINATE_FIRST))
    v = result.verdict
    assert (v.runs, v.duplicates, v.missed, v.coins_paid) == (1, 0, 0, 30)
    outcomes = [(e.replica, f"{e.t:%H:%M}", e.outcome) for e in result.events
                if e.event == "tick"]
    assert outcomes == [("A", "18:00", "unknown"), ("B", "18:01", "ok"), ("C", "18:02", "ok"),
                        ("A", "18:15", "ok"), ("B", "18:16", "ok"), ("C", "18:17", "ok")]
    faults = [(e.replica, e.detail) for e in result.events if e.event == "fault"]
    assert faults == [("A", "terminate-backend: connection ended inside the open transaction, "
                       "which the server rolls back: none of its writes land")]


def test_a_terminated_commit_is_shown_failing_on_its_own_tick_line():
    """Stage 02, two replicas, terminate-backend on A at 18:00 (A alone ticks then): A's one
    line shows its writes, a hold for the fault (no others run), the rollback, and COMMIT
    failed, never a plain COMMIT; B pays at 18:07:30, so nothing of A's landed."""
    two = {**TERMINATE_FIRST, "replicas": 2, "start": "2026-05-29T17:45:00-06:00"}
    del two["offsets"]
    result = runner.run(stages.resolve("02"), scenario.from_dict(two))
    assert result.verdict.runs == 1
    at_18 = [e for e in result.events if f"{e.t:%H:%M:%S}" == "18:00:00"]
    assert {e.replica for e in at_18} == {"A"}
    lines = [line.plain for line in tables.timeline(result) if "18:00:00" in line.plain]
    assert len(lines) == 1
    assert "held before COMMIT while the fault strikes" in lines[0]
    assert "while the others run" not in lines[0]
    assert "none of its writes land" in lines[0]
    assert " · COMMIT failed: OperationalError" in lines[0]
    assert " · COMMIT ·" not in lines[0] and not lines[0].endswith("COMMIT")
    payers = [e.replica for e in result.events if e.event == "write" and "3 " in e.detail]
    assert payers == ["A", "B"]  # A wrote, its transaction was rolled back; B paid


# -- 6. Bad input, everywhere ------------------------------------------------------------------

BAD_ARGS = {
    "run-no-stage": (["run"], "stage"),
    "run-seed": (["run", "03", "--seed", "soon"], "--seed"),
    "run-replicas-zero": (["run", "03", "--replicas", "0"], "--replicas"),
    "run-svg-no-folder": (["run", "03", "--svg", "/nonexistent/out.svg"], "--svg"),
    "run-svg-is-a-folder": (["run", "03", "--svg", "/tmp"], "--svg"),
    "run-html-no-folder": (["run", "03", "--html", "/nonexistent/run.html"], "--html"),
    "run-html-is-a-folder": (["run", "03", "--html", "/tmp"], "--html"),
    "matrix-track": (["matrix", "--track", "weekly"], "--track"),
    "matrix-stage": (["matrix", "--stage", "99"], "unknown stage '99'"),
    "clean-option": (["clean", "--everything"], "--everything"),
    "report-no-html": (["report"], "--html"),
    "report-html-not-writable": (["report", "--html", "/proc/racelab", "--stage", "03"], "--html"),
    "report-stage": (["report", "--html", "/tmp/racelab-report-x", "--stage", "99"],
                     "unknown stage '99'"),
    "subcommand": (["frobnicate"], "frobnicate"),
}


@pytest.mark.parametrize("case", list(BAD_ARGS))
def test_bad_argument_is_one_line_and_exit_2(case):
    """Every CLI argument fed garbage answers with one line naming it and exit code 2."""
    args, word = BAD_ARGS[case]
    out = racelab_here(*args)
    one_line_exit_2(out, word)
    assert out.stdout == ""


def test_a_bad_argument_to_a_process_of_its_own_is_one_line_and_nothing_at_its_exit():
    """The cases above run racelab's main in the test's process; a racelab process of its own
    prints the same one line, and nothing more on its way out (a warning, an ignored error)."""
    out = racelab("matrix", "--track", "weekly")
    one_line_exit_2(out, "--track")
    assert out.stdout == ""


BAD_SCENARIO_FILES = {
    "unknown-key": ('name = "x"\nreplicas = 3\nstart = "2026-05-29T18:00:00-06:00"\n'
                    'end = "2026-05-29T19:00:00-06:00"\nreplcas = 2\n', "replcas"),
    "replicas-word": ('name = "x"\nreplicas = "three"\nstart = "2026-05-29T18:00:00-06:00"\n'
                      'end = "2026-05-29T19:00:00-06:00"\n', "replicas"),
    "fault-needs-replica": ('name = "x"\nreplicas = 3\nstart = "2026-05-29T18:00:00-06:00"\n'
                            'end = "2026-05-29T19:00:00-06:00"\nfaults = [{ kind = '
                            '"terminate-backend", at = "2026-05-29T18:00:00-06:00" }]\n',
                            "faults[0].replica"),
    "not-toml": ("name = \n", "not valid TOML"),
    "lock-turn-word": ('name = "x"\nreplicas = 2\nstart = "2026-05-29T18:00:00-06:00"\n'
                       'end = "2026-05-29T19:00:00-06:00"\nlock_turn = "soon"\n', "lock_turn"),
}


@pytest.mark.parametrize("case", list(BAD_SCENARIO_FILES))
def test_bad_scenario_file_is_one_line_and_exit_2(case, tmp_path):
    """A scenario file with a bad key or value is named back in one line, exit code 2."""
    text, word = BAD_SCENARIO_FILES[case]
    path = tmp_path / f"{case}.toml"
    path.write_text(text)
    one_line_exit_2(racelab_here("run", "03", "--scenario", str(path)), word, stdout=None)


def test_malformed_postgres_url_is_one_line_and_exit_2():
    """RACELAB_POSTGRES_URL that is not a URL stops a run with one line, exit code 2."""
    out = racelab("run", "03", env={services.PG_ENV: "not a url"})
    one_line_exit_2(out, services.PG_ENV, "not a database URL")
    assert out.stdout == ""


BAD_SERVICE_URLS = {
    "postgres-malformed": (services.PG_ENV, "not a url", "not a database URL"),
    "postgres-unreachable": (services.PG_ENV, "postgresql://u@127.0.0.1:1/x", "unreachable"),
    "redis-malformed": (services.REDIS_ENV, "nonsense", "not a Redis URL"),
    "redis-unreachable": (services.REDIS_ENV, "redis://127.0.0.1:1/0", "unreachable"),
}


@pytest.mark.parametrize("case", list(BAD_SERVICE_URLS))
def test_bad_service_url_makes_services_say_one_line_and_exit_2(case):
    """`racelab services` with a bad RACELAB_*_URL names it in one stderr line, exit code 2,
    and still reports the other service on stdout."""
    variable, value, word = BAD_SERVICE_URLS[case]
    out = racelab("services", env={variable: value})
    one_line_exit_2(out, variable, word, stdout=None)
    assert len(out.stdout.strip().splitlines()) == 1
