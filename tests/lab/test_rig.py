"""An exploration's rig (harness.engine.explore.rig) keeps a database and a zygote per replica
across schedules; each schedule must still start as a run of its own would: fresh replica processes
(none remembers a tick of an earlier schedule) on a database with no rows and every sequence
at its start."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg

from harness.engine.explore.dfs import Prefix
from harness.engine.explore.rig import Rig
from harness.engine.explore.steps import Stepper
from harness.engine.inside.messages import Ready, Stop
from harness.engine.model import scenario, stages
from harness.engine.run import replica, runner
from harness.infra import rundb, services
from tests.helpers import ROOT, alive, descendants, wait_for


def _remembering_copy(tmp_path: Path) -> Path:
    """A copy of 00 whose replica skips every tick after its first one, from memory: a process
    that ticked before pays nothing."""
    folder = tmp_path / "00-remembers"
    shutil.copytree(ROOT / "00-the-bug", folder)
    (folder / ".racelab-from").write_text("00-the-bug\n")
    worker = folder / "myapp" / "worker.py"
    text = worker.read_text()
    anchor = ('    """One pass of the loop: decide from the clock what is due, in one '
              'transaction."""\n')
    assert anchor in text
    worker.write_text(text.replace(anchor, anchor + "    if TICKED:\n        return\n"
                                   "    TICKED.append(now)\n") + "\n\nTICKED: list = []\n")
    return folder


def _copy_03(tmp_path: Path, name: str, edit) -> Path:
    folder = tmp_path / name
    shutil.copytree(ROOT / "03-claim-row", folder)
    (folder / ".racelab-from").write_text("03-claim-row\n")
    for file, (old, new) in edit.items():
        path = folder / "myapp" / file
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new, 1))
    return folder


_TICK = '    """One pass of the loop: decide from the clock what is due, in one transaction."""\n'


def _errors(result) -> list[str]:
    return [e.detail for e in result.events if e.event == "error"]


def _play(stage, s, rig):
    return runner.run(stage, s, interleaver=Stepper(Prefix([])), place=rig)


def test_every_schedule_on_a_rig_has_fresh_replicas_and_an_empty_database(pg, tmp_path):
    """Three schedules on one rig each pay twice (2 replicas of 00, each in a process that never
    ticked, counted on a database holding that schedule's rows only), from the same two
    zygotes, and the thread ids start at 1 again (the sequences were reset)."""
    stage = stages.resolve(str(_remembering_copy(tmp_path)))
    s = scenario.resolve("simultaneous", "cron").with_replicas(2)
    replica.prepare()
    rig = Rig(stage, s)
    pids: set[int] = set()
    threads = []
    try:
        for _ in range(3):
            result = _play(stage, s, rig)
            v = result.verdict
            assert (v.runs, v.duplicates, v.missed) == (2, 1, 0)
            pids |= {z.proc.pid for z in rig.zygotes.values()}
            with psycopg.connect(services.libpq_url(rig.url)) as conn:
                threads.append(conn.execute("SELECT min(id), count(*) FROM threads").fetchone())
        assert len(rig.zygotes) == 2 and len(pids) == 2  # the zygotes stay, their children go
        assert len(set(threads)) == 1 and threads[0][0] == 1
    finally:
        rig.close()


def test_a_rigs_zygotes_start_side_by_side_and_one_closed_while_starting_leaves_nothing(pg):
    """Asking for a second zygote does not wait for the first to import the stage (each is
    waited for at its first fork), and closing a rig whose zygotes have not answered yet (a
    Ctrl-C at the start of an exploration) leaves no process behind."""
    s = scenario.resolve("simultaneous", "cron").with_replicas(2)
    replica.prepare()
    pids = []
    for fork_one in (True, False):
        rig = Rig(stages.resolve("03"), s)
        try:
            env = {"DATABASE_URL": rig.url, "DB_POOL_SIZE": "1"}
            zygotes = [rig.zygote(name, env) for name in ("A", "B")]
            assert [z.ready for z in zygotes] == [False, False]
            pids += [z.proc.pid for z in zygotes]
            if fork_one:
                child, conn = zygotes[1].fork({"PGAPPNAME": "racelab:test:B"})
                assert zygotes[1].ready and isinstance(conn.recv(), Ready)
                conn.send(Stop())
                child.join(10)
                assert not child.is_alive()
        finally:
            rig.close()
    wait_for(lambda: not [p for p in pids if alive(p)], "the zygotes to exit")


def test_a_wipe_deletes_children_before_parents_and_vacuums_now_and_then(pg):
    """The rig's wipe runs on a database whose tables point at each other (threads → users,
    sections): no foreign key stops it, and every VACUUM_EVERY wipes it vacuums."""
    stage = stages.resolve("03")
    s = scenario.resolve("simultaneous", "cron").with_replicas(2)
    rig = Rig(stage, s)
    try:
        assert rig.tables.index("public.threads") < rig.tables.index("public.users")
        for _ in range(rundb.VACUUM_EVERY):
            conn = rig.fresh()
            conn.execute("INSERT INTO users (id, username, is_bot) VALUES (1, 'x', false)")
            conn.execute("INSERT INTO sections (slug, name) VALUES ('s', 'S')")
            conn.commit()
        conn = rig.fresh()
        assert conn.execute("SELECT count(*) FROM users").fetchone() == (0,)
        assert conn.execute("SELECT nextval('sections_id_seq')").fetchone() == (1,)
        conn.rollback()
        vacuums = conn.execute("SELECT vacuum_count FROM pg_stat_user_tables "
                               "WHERE relname = 'users'").fetchone()
        conn.rollback()
        assert vacuums is not None and vacuums[0] >= 1
    finally:
        rig.close()


def test_a_command_that_leaves_a_zygote_open_still_exits_and_leaves_no_process(pg):
    """A zygote holds the forkserver's alive pipe and waits on the harness's: a harness ending
    without closing one (an error before its rig's close) closes it at exit, rather than wait
    on the forkserver forever."""
    code = textwrap.dedent("""
        import harness.builtins
        from harness.engine.model import stages
        from harness.engine.model.tracks import NO_RULES
        from harness.engine.run import replica
        from harness.engine.run.zygote import Zygote
        from harness.infra import services
        replica.prepare()
        url = services.app_url(services.postgres().url, "postgres")
        z = Zygote(stages.resolve("03").path, {"DATABASE_URL": url, "DB_POOL_SIZE": "1"},
                   NO_RULES)
        print(z.proc.pid, flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    zygote = int(proc.stdout.readline())
    seen = descendants(proc.pid) | {zygote}
    assert proc.wait(timeout=60) == 0
    wait_for(lambda: not [p for p in seen if alive(p)], "the zygote and the forkserver to exit")


def test_tables_whose_foreign_keys_make_a_cycle_have_no_delete_order_and_are_truncated(pg):
    """Two tables pointing at each other: no order deletes them, so the wipe truncates."""
    rig = Rig(stages.resolve("03"), scenario.resolve("simultaneous", "cron").with_replicas(2))
    try:
        conn = rig.fresh()
        conn.execute("CREATE TABLE a (id int PRIMARY KEY, b int)")
        conn.execute("CREATE TABLE b (id int PRIMARY KEY, a int REFERENCES a)")
        conn.execute("ALTER TABLE a ADD FOREIGN KEY (b) REFERENCES b DEFERRABLE INITIALLY DEFERRED")
        conn.execute("INSERT INTO a VALUES (1, 1)")
        conn.execute("INSERT INTO b VALUES (1, 1)")
        conn.commit()
        assert rundb.delete_order(conn) is None
        conn.commit()
        rig.tables = None
        conn = rig.fresh()
        assert conn.execute("SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM b)"
                            ).fetchone() == (0, 0)
        conn.rollback()
    finally:
        rig.close(failed=True)  # its schema is not the stage's any more


def test_a_zygote_configures_the_apps_mappers_so_its_children_start_with_them_done(pg, tmp_path):
    """A copy of 03 logs at the start of each tick whether its ORM mappers still wait to be
    configured: yes in a replica from the forkserver (its first query does it), no in one
    forked from a zygote (done there once, not in each child)."""
    stage = stages.resolve(str(_copy_03(tmp_path, "03-says", {"worker.py": (
        _TICK, _TICK + "    from myapp.models import Base\n"
                       "    log.info('mappers new: %s', Base.registry._new_mappers)\n")})))
    s = scenario.resolve("simultaneous", "cron").with_replicas(2)
    replica.prepare()

    def said(result) -> set[str]:
        return {e.detail for e in result.events if "mappers new" in e.detail}

    assert said(_play(stage, s, None)) == {"info: mappers new: True"}
    rig = Rig(stage, s)
    try:
        assert said(_play(stage, s, rig)) == {"info: mappers new: False"}
    finally:
        rig.close()


def test_mappers_that_fail_to_configure_fail_the_first_tick_as_in_a_fresh_replica(pg, tmp_path):
    """A copy of 03 whose User points at a model that does not exist: the zygote leaves its
    mappers alone (a first try, in a throwaway fork, failed), so a replica forked from it
    reports the same error as one from the forkserver, not SQLAlchemy's "One or more mappers
    failed to initialize" that a second try gives."""
    stage = stages.resolve(str(_copy_03(tmp_path, "03-broken-model", {"models.py": (
        '    __tablename__ = "users"\n',
        '    __tablename__ = "users"\n    nope = relationship("NoSuchModel")\n'), })))
    models = stage.path / "myapp" / "models.py"
    models.write_text("from sqlalchemy.orm import relationship\n" + models.read_text())
    s = scenario.resolve("simultaneous", "cron").with_replicas(2)
    replica.prepare()
    fresh = _errors(_play(stage, s, None))
    assert fresh and "'NoSuchModel' failed to locate a name" in fresh[0]
    rig = Rig(stage, s)
    try:
        for _ in range(2):
            assert _errors(_play(stage, s, rig)) == fresh
    finally:
        rig.close()


def _session_seen(leaves: str) -> str:
    """A tick's first lines: log its session (server process, two settings, its advisory locks,
    its name), then leave `leaves` set and an advisory lock taken for the next tick to find."""
    return (
        "    async with SessionLocal() as seen:\n"
        "        pid, timeout, custom, locks, name = (await seen.execute(text(\n"
        "            \"SELECT pg_backend_pid(), current_setting('statement_timeout'), \"\n"
        "            \"current_setting('racelab.leftover', true), \"\n"
        "            \"(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' \"\n"
        "            \"AND pid = pg_backend_pid()), current_setting('application_name')\"\n"
        "        ))).one()\n"
        "        log.info('session %s timeout=%s custom=%s locks=%s name=%s', pid, timeout, \n"
        "                 custom, locks, name)\n"
        f"        await seen.execute(text(\"SET {leaves}\"))\n"
        "        await seen.execute(text(\n"
        "            \"SELECT pg_advisory_lock(hashtext(current_setting('application_name')))\"))\n"
        "        await seen.commit()\n")


class _Refuses:
    """A chooser that stops the run at its first choice (as a bad schedule would)."""

    def choose(self, view):
        from harness.errors import UserError

        raise UserError("stopped by the test")


@contextlib.contextmanager
def _rig_of(stage):
    """A rig for 2 replicas of `stage` over simultaneous, closed at the end: (scenario, rig)."""
    s = scenario.resolve("simultaneous", "cron").with_replicas(2)
    replica.prepare()
    rig = Rig(stage, s)
    try:
        yield s, rig
    finally:
        rig.close()


def _session_of_a(result) -> tuple[str, str]:
    assert _errors(result) == []
    [line] = [e.detail for e in result.events if e.replica == "A" and "session " in e.detail]
    pid, rest = line.removeprefix("info: session ").split(" ", 1)
    return pid, rest


def test_a_zygotes_connection_goes_from_child_to_child_as_a_fresh_session(pg, tmp_path):
    """A copy of 03 whose tick first logs its session, then leaves a setting changed and an
    advisory lock taken. On one rig, each schedule's replica A runs on the server process its
    zygote opened (the connection is handed on: no connection and no server process a
    schedule), yet finds neither the setting nor the lock its predecessor left (DISCARD ALL),
    and carries the run's own name. A run stopped midway (its replicas killed inside their
    ticks) hands nothing on: the next schedule's A has a server process of its own, and the
    killed one's is gone."""
    stage = stages.resolve(str(_copy_03(tmp_path, "03-session", {"worker.py": (
        _TICK, _TICK + _session_seen("statement_timeout = '123s'"))})))
    with _rig_of(stage) as (s, rig):
        seen = [_session_of_a(_play(stage, s, rig)) for _ in range(3)]
        assert len({pid for pid, _ in seen}) == 1, seen  # one server process: handed on
        for _, rest in seen:
            assert rest.startswith("timeout=0 custom=None locks=0 name=racelab:"), rest
            assert rest.endswith(":A")
        with contextlib.suppress(Exception):
            runner.run(stage, s, interleaver=Stepper(_Refuses()), place=rig)
        after = _session_of_a(_play(stage, s, rig))
        assert after[0] != seen[0][0] and after[1].startswith("timeout=0 custom=None locks=0")
        with psycopg.connect(services.libpq_url(rig.url)) as conn:
            assert conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                                (int(seen[0][0]),)).fetchone() == (0,)


def test_a_session_that_defined_a_setting_of_its_own_is_not_handed_on(pg, tmp_path):
    """DISCARD ALL resets a custom setting (SET racelab.leftover) but keeps it defined, as ''
    where a new session has none: a replica that defined one gives its connection up, and each
    schedule's A has a server process of its own that finds nothing defined."""
    stage = stages.resolve(str(_copy_03(tmp_path, "03-custom", {"worker.py": (
        _TICK, _TICK + _session_seen("racelab.leftover = 'yes'"))})))
    with _rig_of(stage) as (s, rig):
        seen = [_session_of_a(_play(stage, s, rig)) for _ in range(3)]
        assert len({pid for pid, _ in seen}) == 3, seen
        assert all(rest.startswith("timeout=0 custom=None locks=0") for _, rest in seen), seen


_PER_CONNECTION = '''

from sqlalchemy import event


@event.listens_for(engine.sync_engine, "connect")
def _per_connection(dbapi_connection, record):
    cursor = dbapi_connection.cursor()
    cursor.execute("SET lock_timeout = '1234ms'")
    cursor.close()
    dbapi_connection.commit()
'''


def test_a_pool_with_a_listener_of_the_apps_own_on_new_connections_is_not_lent(pg, tmp_path):
    """A copy of 03 whose engine sets lock_timeout on each new connection (a pool `connect`
    listener): a lent session, reset by DISCARD ALL, would come to the second schedule's
    replica without it. So such a pool is not lent: every schedule's replica has the setting,
    on a server process of its own."""
    folder = _copy_03(tmp_path, "03-per-connection", {"worker.py": (_TICK, _TICK + (
        "    async with SessionLocal() as seen:\n"
        "        row = (await seen.execute(text(\n"
        "            \"SELECT pg_backend_pid(), current_setting('lock_timeout')\"))).one()\n"
        "        log.info('session %s lock_timeout=%s', *row)\n"))})
    db = folder / "myapp" / "db.py"
    db.write_text(db.read_text() + _PER_CONNECTION)
    stage = stages.resolve(str(folder))
    with _rig_of(stage) as (s, rig):
        seen = [_session_of_a(_play(stage, s, rig)) for _ in range(3)]
        assert [rest for _, rest in seen] == ["lock_timeout=1234ms"] * 3, seen
        assert len({pid for pid, _ in seen}) == 3, seen


def test_an_alerts_world_is_kept_across_schedules_and_starts_over_empty(pg):
    """On one rig, alerts-01's schedules run on one Redis server and one webhook sink (the
    world's environment is the same, so the replicas fork from the zygotes), yet each sends its
    one alert and lists the sandboxes once: the claim key, the deliveries and the seeded rows of
    the schedule before are gone. A run stopped midway leaves what its services hold unknown:
    the next run gets a world of its own, and is counted the same."""
    stage = stages.resolve("alerts-01")
    s = scenario.resolve("simultaneous", "alerts").with_replicas(2)
    replica.prepare()
    rig = Rig(stage, s)
    try:
        counts, urls = [], []
        for _ in range(3):
            v = _play(stage, s, rig).verdict
            counts.append((v.sent, v.listed, v.duplicates, v.missed))
            urls.append(rig.kept.env["REDIS_URL"])
        assert len(set(urls)) == 1 and rig.forking and len(rig.zygotes) == 2
        with contextlib.suppress(Exception):
            runner.run(stage, s, interleaver=Stepper(_Refuses()), place=rig)
        v = _play(stage, s, rig).verdict
        counts.append((v.sent, v.listed, v.duplicates, v.missed))
        assert rig.kept.env["REDIS_URL"] != urls[0]
        assert counts == [(1, 1, 0, 0)] * 4, counts
    finally:
        rig.close()


def test_a_database_handed_back_is_taken_again_wiped_and_vacuumed_now_and_then(pg):
    """A run's database handed back (rundb.release) is the next run's, wiped as the rig wipes:
    no rows, every sequence at its start, and every VACUUM_EVERY takings a VACUUM."""
    ddl = runner.ddl_of(stages.resolve("03"))
    name = rundb.acquire(pg.url, ddl)
    try:
        url = services.libpq_url(services.app_url(pg.url, name))
        for _ in range(rundb.VACUUM_EVERY):
            with psycopg.connect(url) as conn:
                conn.execute("INSERT INTO users (id, username, is_bot) VALUES (1, 'x', false)")
                conn.execute("INSERT INTO sections (slug, name) VALUES ('s', 'S')")
                conn.execute("INSERT INTO threads (id, section_id, author_id, title, body, "
                             "created_at, last_activity_at, closed) "
                             "VALUES (1, 1, 1, 't', '', now(), now(), false)")
            rundb.release(pg.url, name)
            assert rundb.acquire(pg.url, ddl) == name
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT (SELECT count(*) FROM users), "
                                "(SELECT count(*) FROM threads)").fetchone() == (0, 0)
            assert conn.execute("SELECT nextval('sections_id_seq')").fetchone() == (1,)
            assert conn.execute("SELECT vacuum_count FROM pg_stat_user_tables "
                                "WHERE relname = 'users'").fetchone()[0] >= 1
    finally:
        rundb.discard(pg.url, name)


def test_a_schema_that_refuses_deletes_is_truncated_and_a_table_a_run_made_is_emptied(pg):
    """A DELETE trigger of the schema's own (an append-only ledger) would make the DELETE wipe
    fail or write rows of its own: such a database is truncated. A table a run created is
    emptied at the next taking too (the tables are read at each wipe)."""
    ddl = ["CREATE TABLE ledger (id serial PRIMARY KEY, amount int NOT NULL)",
           "CREATE FUNCTION append_only() RETURNS trigger LANGUAGE plpgsql AS "
           "$$ BEGIN RAISE EXCEPTION 'the ledger is append-only'; END $$",
           "CREATE TRIGGER append_only BEFORE DELETE ON ledger FOR EACH ROW "
           "EXECUTE FUNCTION append_only()"]
    name = rundb.acquire(pg.url, ddl)
    try:
        url = services.libpq_url(services.app_url(pg.url, name))
        with psycopg.connect(url) as conn:
            assert rundb.delete_order(conn) is None
            conn.execute("INSERT INTO ledger (amount) VALUES (30)")
            conn.execute("CREATE TABLE made_by_the_run (x int)")
            conn.execute("INSERT INTO made_by_the_run VALUES (1)")
        rundb.release(pg.url, name)
        assert rundb.acquire(pg.url, ddl) == name
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("SELECT (SELECT count(*) FROM ledger), "
                                "(SELECT count(*) FROM made_by_the_run)").fetchone() == (0, 0)
            conn.execute("INSERT INTO ledger (amount) VALUES (30)")
            rundb.wipe(conn, ["public.ledger"], 1)  # a DELETE the trigger refuses: TRUNCATE
            assert conn.execute("SELECT count(*) FROM ledger").fetchone() == (0,)
            conn.execute("DROP TRIGGER append_only ON ledger")
            conn.execute("INSERT INTO ledger (amount) VALUES (30)")
            tables = rundb.delete_order(conn)
        rundb.release(pg.url, name)
        assert tables is not None and rundb.acquire(pg.url, ddl) == name
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT count(*), max(id) FROM ledger").fetchone() == (0, None)
    finally:
        rundb.discard(pg.url, name)
