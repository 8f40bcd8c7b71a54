"""A job of the user's own (`--project DIR`): a folder outside the checkout holding only an app
and its pyproject.toml, described under [tool.racelab] (docs/own-job.md), run and explored as
a stage is. The app here: a daily digest, written once per day by whichever replica's
scheduler fires; the bug checks for today's row and inserts (each replica's own check sees
none while the others' inserts are uncommitted), the fix inserts ON CONFLICT DO NOTHING on a
unique day."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg
import pytest

from harness.infra import services
from tests.helpers import ROOT, one_line_exit_2, racelab_here, racelab_json

DESCRIPTION = """\
[project]
name = "digestapp"
version = "0.1.0"

[tool.racelab]
job = "digest.jobs:send_daily_digest"
every = "1d"
start = "2026-06-01T08:00:00+02:00"
slots = 2
timezone = "Europe/Berlin"
schema = "digest.models:Base"

[tool.racelab.effects.digests]
query = "SELECT count(*) FROM digests WHERE day = %(slot)s::date"
expect = "exactly once"
"""

DB = """\
import os

from sqlalchemy import create_engine
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine
from sqlalchemy.orm import sessionmaker

Session = sessionmaker(create_engine(os.environ["DATABASE_URL"]))
AsyncSession = async_sessionmaker(create_async_engine(os.environ["DATABASE_URL"]))
"""

MODELS = """\
from sqlalchemy import Date, Integer, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Digest(Base):
    __tablename__ = "digests"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    day = mapped_column(Date, nullable=False, unique={unique})
    body: Mapped[str] = mapped_column(String(200))
"""

BUG = """\
from sqlalchemy import select

from digest.db import AsyncSession
from digest.models import Digest


async def send_daily_digest(now):
    async with AsyncSession() as s:
        if await s.scalar(select(Digest.id).where(Digest.day == now.date())) is None:
            s.add(Digest(day=now.date(), body="today's digest"))
        await s.commit()
"""

FIX = """\
from sqlalchemy.dialects.postgresql import insert

from digest.db import Session
from digest.models import Digest


def send_daily_digest(now):
    with Session() as s:
        s.execute(insert(Digest).values(day=now.date(), body="today's digest")
                  .on_conflict_do_nothing(index_elements=["day"]))
        s.commit()
"""


def _project(tmp_path: Path, name: str, job: str, unique: bool) -> Path:
    """A project folder of its own: pyproject.toml and a package, no stage layout."""
    folder = tmp_path / name
    (folder / "digest").mkdir(parents=True)
    (folder / "pyproject.toml").write_text(DESCRIPTION)
    (folder / "digest" / "__init__.py").write_text("")
    (folder / "digest" / "db.py").write_text(DB)
    (folder / "digest" / "models.py").write_text(MODELS.replace("{unique}", str(unique)))
    (folder / "digest" / "jobs.py").write_text(job)
    return folder


def _landed(data: dict) -> list[int]:
    return [e["landed"] for e in data["effects"]]


def test_a_check_then_insert_job_writes_twice_when_replicas_fire_together_and_its_fix_once(
        tmp_path):
    """simultaneous (both replicas' schedulers fire at 08:00, each transaction held open while
    the other checks): the bug writes two digests on each of its two days, the fix one; a
    minute apart (staggered) the bug's check sees the row and writes one too."""
    bug = _project(tmp_path, "digest-bug", BUG, unique=False)
    fix = _project(tmp_path, "digest-fix", FIX, unique=True)
    together = racelab_json(racelab_here("run", "--project", str(bug), "--scenario",
                                         "simultaneous", "--json"))
    assert (together["track"], _landed(together), together["duplicates"]) == (
        "project", [2, 2], 2)
    assert [e["slot"] for e in together["effects"]] == [
        "2026-06-01T08:00:00+02:00", "2026-06-02T08:00:00+02:00"]
    apart = racelab_json(racelab_here("run", "--project", str(bug), "--json"))
    assert (apart["scenario"], _landed(apart), apart["duplicates"]) == ("staggered", [1, 1], 0)
    fixed = racelab_json(racelab_here("run", "--project", str(fix), "--scenario",
                                      "simultaneous", "--json"))
    assert (_landed(fixed), fixed["duplicates"], fixed["missed"]) == ([1, 1], 0, 0)
    out = racelab_here("run", "--project", str(bug), "--scenario", "simultaneous")
    assert "2026-06-01T08:00+02:00: 2 digests, expected exactly once" in out.stdout
    killed = racelab_json(racelab_here("run", "--project", str(bug), "--scenario",
                                       "kill-mid-tick", "--json"))  # A dies in its first slot
    assert [(f["kind"], f["replica"], f["applied"]) for f in killed["faults"]] == [
        ("kill-mid-tick", "A", True)]
    assert _landed(killed) == [1, 1]  # A's digest rolled back; B's check a minute later wrote


def test_explore_finds_the_bugs_duplicate_and_every_schedule_of_the_fix_writes_once(tmp_path):
    """Every schedule of 2 replicas up to one preemption (each slot's statements, SQLAlchemy's,
    held one at a time): the bug writes a second digest in some, the fix in none."""
    bug = _project(tmp_path, "digest-bug", BUG, unique=False)
    fix = _project(tmp_path, "digest-fix", FIX, unique=True)
    args = ("--replicas", "2", "--preemptions", "1", "--json")
    found = racelab_json(racelab_here("explore", "--project", str(bug), *args))
    assert found["complete"] and any(o["bad"] for o in found["outcomes"])
    assert "digests 2, 1 per slot" in {o["outcome"] for o in found["outcomes"]}
    shortest = next(o for o in found["outcomes"] if o["bad"])["shortest"]
    replay = racelab_json(racelab_here("run", "--project", str(bug), "--scenario",
                                       "simultaneous", "--replicas", "2", "--schedule",
                                       shortest, "--json"))
    assert replay["duplicates"] >= 1
    clean = racelab_json(racelab_here("explore", "--project", str(fix), *args))
    assert [(o["outcome"], o["bad"]) for o in clean["outcomes"]] == [
        ("digests 1, 1 per slot", False)]
    assert clean["schedules"] > 1


@pytest.mark.parametrize(("old", "new", "words"), [
    ('job = "digest.jobs:send_daily_digest"', 'job = "digest.jobs:send_weekly"',
     ["[tool.racelab] job:", "'digest.jobs' has no 'send_weekly'"]),
    ('job = "digest.jobs:send_daily_digest"', 'job = "digest.mailer:send"',
     ["[tool.racelab] job:", "no module 'digest.mailer'"]),
    ('job = "digest.jobs:send_daily_digest"', 'job = "send_daily_digest"',
     ["[tool.racelab] job:", "is not module:function"]),
    ('schema = "digest.models:Base"', 'schema = "digest.models:Bse"',
     ["[tool.racelab] schema:", "has no 'Bse'"]),
    ('query = "SELECT count(*)', 'query = "DELETE FROM digests WHERE count(*)',
     ["[tool.racelab] effects.digests query:", "is not one SELECT"]),
    ('FROM digests WHERE', 'FROM digests; DELETE FROM digests WHERE',
     ["[tool.racelab] effects.digests query:", "is not one SELECT"]),
    ('FROM digests WHERE', 'FROM digest WHERE',
     ["[tool.racelab] effects.digests query:", 'relation "digest" does not exist']),
    ('every = "1d"', 'every = "daily"', ["[tool.racelab] every:", "is not a duration"]),
    ('timezone = "Europe/Berlin"', 'timezone = "Berlin"', ["[tool.racelab] timezone:"]),
    ('slots = 2', 'slot = 2', ["unknown key 'slot'"]),
    ('SELECT count(*)', 'SELECT count(*) - 5', ["effects.digests query:", "of at least 0"]),
])
def test_a_wrong_description_is_one_line_and_exit_2_naming_its_key(tmp_path, old, new, words):
    folder = _project(tmp_path, "digest-bug", BUG, unique=False)
    text = (folder / "pyproject.toml").read_text()
    assert old in text
    (folder / "pyproject.toml").write_text(text.replace(old, new, 1))
    one_line_exit_2(racelab_here("run", "--project", str(folder), "--scenario", "simultaneous"),
                    *words)


def test_an_effect_counted_over_its_slots_window_and_a_job_modules_own_import_error(tmp_path):
    """%(next_slot)s bounds a window: the digests of [slot, next slot) are the slot's. A module
    of the job's that imports one missing is that file's line, not a key of the description."""
    folder = _project(tmp_path, "digest-window", BUG, unique=False)
    path = folder / "pyproject.toml"
    path.write_text(path.read_text().replace(
        "WHERE day = %(slot)s::date", "WHERE day >= %(slot)s::date AND day < %(next_slot)s::date"))
    data = racelab_json(racelab_here("run", "--project", str(folder), "--scenario",
                                     "simultaneous", "--json"))
    assert _landed(data) == [2, 2]
    (folder / "digest" / "jobs.py").write_text("import mailer_we_forgot\n" + BUG)
    one_line_exit_2(racelab_here("run", "--project", str(folder)),
                    "jobs.py:1: ModuleNotFoundError")


def test_a_folder_without_a_description_or_with_a_stage_too_is_one_line_and_exit_2(tmp_path):
    one_line_exit_2(racelab_here("run", "--project", ""), "--project: an empty path")
    one_line_exit_2(racelab_here("run", "--project", str(tmp_path)), "no pyproject.toml")
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""\
        [project]
        name = "plain"
        """))
    one_line_exit_2(racelab_here("run", "--project", str(tmp_path)), "no [tool.racelab] table")
    one_line_exit_2(racelab_here("run", "03", "--project", str(tmp_path)), "not both")
    one_line_exit_2(racelab_here("run", "--project", str(tmp_path / "gone")), "not a folder")


def test_step_on_a_project_prints_a_replay_line_that_names_the_project(tmp_path):
    """`racelab step --project DIR`: the person's schedule, and a replay command that runs it
    on the same project."""
    bug = _project(tmp_path, "digest-bug", BUG, unique=False)
    out = subprocess.run([sys.executable, "-m", "harness.cli", "step", "--project", str(bug),
                          "--scenario", "simultaneous", "--replicas", "2"],
                         input="A\nB\nA\nB\n", capture_output=True, text=True, timeout=300,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("replay it: "))
    schedule = line.split("--schedule ")[1].strip("'")
    assert f"run --project {bug} --scenario simultaneous --replicas 2" in line
    replay = racelab_json(racelab_here("run", "--project", str(bug), "--scenario",
                                       "simultaneous", "--replicas", "2", "--schedule",
                                       schedule, "--json"))
    assert replay["schedule"] == schedule


def test_the_matrix_of_a_project_marks_its_forced_cell_and_finds_the_bug_not_the_fix(tmp_path):
    """`matrix --project DIR`: every scenario of the project track on its slots. The bug writes
    a second digest where two replicas' transactions overlap (simultaneous, †: the overlap is
    forced; pause, §: A holds its transaction open 5 minutes), the fix in no cell."""
    bug = _project(tmp_path, "digest-bug", BUG, unique=False)
    fix = _project(tmp_path, "digest-fix", FIX, unique=True)
    cells = {c["scenario"]: c for c in racelab_json(racelab_here("matrix", "--project", str(bug),
                                                                 "--json"))}
    assert list(cells) == ["simultaneous", "staggered", "deploy-restart", "kill-mid-tick",
                           "clock-skew", "pause"]
    assert {name for name, c in cells.items() if c["duplicates"]} == {"simultaneous", "pause"}
    assert [m["mark"] for m in cells["simultaneous"]["marks"]] == ["†"]
    fixed = racelab_json(racelab_here("matrix", "--project", str(fix), "--json"))
    assert [(c["duplicates"], c["missed"]) for c in fixed] == [(0, 0)] * 6


HITS = """\
[project]
name = "hitcounter"
version = "0.1.0"

[tool.racelab]
job = "hits.handler:count_visit"
every = "1h"
slots = 1
schema = "schema.sql"
seed = "seed.sql"

[tool.racelab.effects.hits]
query = "SELECT hits FROM page_hits WHERE day = %(slot)s::date"
expect = "once per replica"
"""

HANDLER = """\
import os

from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

engine = create_engine(os.environ["DATABASE_URL"])


def count_visit(now):
    \"\"\"A request handler: read the counter, add one in Python, write it back.\"\"\"
    with Session(engine) as s:
        hits = s.scalar(text("SELECT hits FROM page_hits WHERE day = :d"), {"d": now.date()})
        s.execute(text("UPDATE page_hits SET hits = :h WHERE day = :d"),
                  {"h": hits + 1, "d": now.date()})
        s.commit()
"""


def test_explore_finds_a_request_handlers_lost_update_at_one_preemption(tmp_path):
    """Two replicas each handle one visit in the slot; the handler reads the counter and
    writes back its value plus one. With no preemption each sees the other's commit (2 hits);
    with one, both read 0 before either writes: 1 hit, one visit lost. The schema and the
    seed are .sql files of the project's."""
    folder = tmp_path / "hitcounter"
    (folder / "hits").mkdir(parents=True)
    (folder / "pyproject.toml").write_text(HITS)
    (folder / "hits" / "__init__.py").write_text("")
    (folder / "hits" / "handler.py").write_text(HANDLER)
    (folder / "schema.sql").write_text(
        "CREATE TABLE page_hits (day date PRIMARY KEY, hits integer NOT NULL);\n")
    (folder / "seed.sql").write_text("INSERT INTO page_hits VALUES ('2026-06-01', 0);\n")
    args = ("explore", "--project", str(folder), "--replicas", "2", "--json")
    none = racelab_json(racelab_here(*args, "--preemptions", "0"))
    assert [(o["outcome"], o["bad"]) for o in none["outcomes"]] == [("hits 2 per slot", False)]
    one = racelab_json(racelab_here(*args, "--preemptions", "1"))
    lost = next(o for o in one["outcomes"] if o["outcome"].startswith("hits 1 per slot"))
    assert lost["bad"] and lost["shortest_preemptions"] == 1


USERS_TEST = """\
import pytest


def test_no_schedule_of_two_replicas_writes_a_second_digest(racelab):
    found = racelab.explore(preemptions=1)
    assert found.bad == []


@pytest.mark.racelab_scenarios("simultaneous", "staggered")
def test_every_day_gets_one_digest(racelab, racelab_scenario):
    run = racelab.run()
    assert run.duplicates == 0 and run.effects["digests"] == [1, 1]
"""


def _users_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """pytest in the project's folder, as its owner runs it, with racelab installed (its
    plugin comes through the pytest11 entry point: no conftest, no -p)."""
    if not (folder / "tests").exists():  # an example brings its own
        (folder / "tests").mkdir()
        (folder / "tests" / "test_digest.py").write_text(USERS_TEST)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=600)


def test_the_pytest_plugin_fails_the_bug_with_its_schedule_and_passes_the_fix(tmp_path):
    """The owner's own test file: the bug's exploration fails with the shortest bad schedule
    and the command that replays it in the report, and its simultaneous run with the
    timeline; the fix passes every test, also under pytest-xdist."""
    bug = _project(tmp_path, "digest-bug", BUG, unique=False)
    out = _users_pytest(bug)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "2 failed, 1 passed" in out.stdout
    assert "test_every_day_gets_one_digest[simultaneous] " in out.stdout
    assert "racelab: the runs and explorations of this test" in out.stdout
    assert f"the shortest replays with: racelab run --project {bug} --scenario " \
           "simultaneous --replicas 2 --schedule '" in out.stdout
    assert "held before COMMIT while the others" in out.stdout  # the failed run's timeline
    fix = _project(tmp_path, "digest-fix", FIX, unique=True)
    out = _users_pytest(fix, "-n", "2")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "3 passed" in out.stdout


PLAIN = """\
import os

import psycopg


def send_daily_digest(now):
    with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
        seen = conn.execute("SELECT id FROM digests WHERE day = %s", (now.date(),)).fetchone()
        if seen is None:
            conn.execute("INSERT INTO digests (day, body) VALUES (%s, 'hi')", (now.date(),))
"""


def _plain(tmp_path: Path, job: str = PLAIN) -> Path:
    """The digest with psycopg used directly: no SQLAlchemy, a .sql schema, one slot."""
    folder = tmp_path / "plain"
    (folder / "digest").mkdir(parents=True)
    (folder / "pyproject.toml").write_text(
        DESCRIPTION.replace("slots = 2", 'slots = 1\ndriver = "postgresql"')
        .replace('schema = "digest.models:Base"', 'schema = "schema.sql"'))
    (folder / "schema.sql").write_text(
        "CREATE TABLE digests (id serial PRIMARY KEY, day date NOT NULL, body text);\n")
    (folder / "digest" / "__init__.py").write_text("")
    (folder / "digest" / "jobs.py").write_text(job)
    return folder


def test_a_job_on_plain_psycopg_is_stepped_statement_by_statement(tmp_path):
    """No SQLAlchemy: each SELECT, INSERT and COMMIT of psycopg's is a step of its own (the
    person sees each as `next:`), `run` forces the overlap before COMMIT, and explore finds
    the schedule where both replicas check before either inserts."""
    folder = _plain(tmp_path)
    out = subprocess.run([sys.executable, "-m", "harness.cli", "step", "--project", str(folder),
                          "--scenario", "simultaneous"], input="A\nB\nA\nB\nA\nB\n",
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    shown = [line.split("next: ")[1] for line in out.stdout.splitlines() if "next: " in line]
    assert set(shown) == {"SELECT id FROM digests WHERE day = %s",
                          "INSERT INTO digests (day, body) VALUES (%s, 'hi')", "COMMIT"}
    forced = racelab_json(racelab_here("run", "--project", str(folder), "--scenario",
                                       "simultaneous", "--json"))
    assert _landed(forced) == [2]
    found = racelab_json(racelab_here("explore", "--project", str(folder), "--replicas", "2",
                                      "--preemptions", "1", "--json"))
    twice = next(o for o in found["outcomes"] if o["outcome"] == "digests 2 per slot")
    assert twice["bad"] and twice["shortest_preemptions"] == 1


def test_a_job_that_connects_to_another_database_stops_the_run_with_one_line(tmp_path):
    """The job's own URL, not the one its variable names: the run stops at its first
    connection, before a statement, naming database_env."""
    folder = _plain(tmp_path, PLAIN.replace('os.environ["DATABASE_URL"]',
                                            '"host=127.0.0.1 dbname=postgres user=postgres"'))
    for command in ("run", "explore"):
        one_line_exit_2(racelab_here(command, "--project", str(folder), "--scenario",
                                     "simultaneous"),
                        "[tool.racelab] database_env:", "connected to database 'postgres'",
                        stdout=None)
    # the next command in this process is a command of its own: the stopped exploration's
    # stop flag does not stop its run
    fine = _project(tmp_path, "digest-fix", FIX, unique=True)
    assert racelab_json(racelab_here("run", "--project", str(fine), "--json"))["runs"] == 2


@pytest.mark.parametrize(("old", "new", "words"), [
    ('database_env = "DATABASE_URL"', 'database_env = "PATH"',
     ["[tool.racelab] database_env:", "a variable the lab or Python needs"]),
    ('timezone = "Europe/Berlin"', 'timezone = "right/UTC"', ["[tool.racelab] timezone:"]),
    ('job = "digest.jobs:send_daily_digest"', 'job = "digest.jobs:nosuch"',
     ["[tool.racelab] job:", "has no 'nosuch'"]),
])
def test_a_wrong_description_of_a_plain_job_is_one_line_and_exit_2(tmp_path, old, new, words):
    """With a .sql schema the job is checked before the run all the same."""
    folder = _plain(tmp_path)
    path = folder / "pyproject.toml"
    path.write_text(path.read_text().replace(
        "[tool.racelab]\n", '[tool.racelab]\ndatabase_env = "DATABASE_URL"\n').replace(old, new))
    one_line_exit_2(racelab_here("run", "--project", str(folder)), *words)


def test_a_schema_file_postgresql_refuses_and_a_folder_named_like_a_stage(tmp_path):
    """A schema file with a typo is one line; a project folder named 03 is that folder, not
    the lab's stage 03."""
    folder = _plain(tmp_path)
    (folder / "schema.sql").write_text("CREAT TABLE digests (id serial);\n")
    one_line_exit_2(racelab_here("run", "--project", str(folder)),
                    "creating the schema:", "syntax error")
    named = _project(tmp_path / "stage-like", "03", BUG, unique=False)
    ran = racelab_json(racelab_here("run", "--project", str(named), "--json"))
    assert ran["track"] == "project"


def test_a_job_that_reads_the_clock_itself_sees_the_runs_virtual_clock(tmp_path):
    """The digest keyed by `date.today()` and stamped with `datetime.now()`, not by the time
    it is given: each replica's clock reads the slot's day (and its skew), so each day gets
    its digest, on the day the slot falls."""
    job = "from datetime import date\n\n" + BUG.replace("now.date()", "date.today()")
    folder = _project(tmp_path, "digest-clock", job, unique=False)
    data = racelab_json(racelab_here("run", "--project", str(folder), "--json"))
    assert _landed(data) == [1, 1]


def _example(tmp_path: Path, name: str) -> Path:
    """An example folder of the checkout's, copied out of it (its owner's own folder)."""
    folder = tmp_path / name
    shutil.copytree(ROOT / "examples" / name, folder)
    return folder


def test_the_examples_do_what_their_readme_says(tmp_path):
    """examples/README.md: digest-bug's pytest file fails with its schedule, digest-fixed's
    passes under every scenario, and explore finds hit-counter's lost visit at one
    preemption (its pytest file fails the same way)."""
    bug = _example(tmp_path, "digest-bug")
    out = _users_pytest(bug)
    assert out.returncode == 1 and "3 failed, 4 passed" in out.stdout, out.stdout + out.stderr
    assert "the shortest replays with: racelab run --project" in out.stdout
    fixed = _users_pytest(_example(tmp_path, "digest-fixed"))
    assert fixed.returncode == 0 and "7 passed" in fixed.stdout, fixed.stdout + fixed.stderr
    hits = _example(tmp_path, "hit-counter")
    found = racelab_json(racelab_here("explore", "--project", str(hits), "--replicas", "2",
                                      "--preemptions", "1", "--json"))
    lost = [o for o in found["outcomes"] if o["bad"]]
    assert [o["outcome"] for o in lost] == ["visits 1 per slot, 1 missed"]
    assert lost[0]["shortest_preemptions"] == 1
    assert _users_pytest(hits).returncode == 1


def test_a_projects_picture_names_the_project_and_shows_its_effects_as_they_land(tmp_path):
    """run --svg: the heading replays the run (--project DIR), and the shared-state lane shows
    each effect's counts slot by slot after each commit, the second digest of day one first."""
    bug = _project(tmp_path, "digest-bug", BUG, unique=False)
    svg = tmp_path / "run.svg"
    out = racelab_here("run", "--project", str(bug), "--scenario", "simultaneous", "--svg",
                       str(svg))
    assert out.returncode == 0, out.stderr
    text = svg.read_text()
    assert f"racelab run --project {bug} --scenario simultaneous" in text
    assert "digests 2, 0" in text and "digests 2, 2" in text
    assert "nothing committed" not in text


def test_find_race_on_a_project_finds_the_bugs_scenario_that_replays_and_none_for_the_fix(
        tmp_path):
    """`find-race --project DIR`: scenarios drawn on the job's slots, the first that breaks an
    effect's promise shrunk and written (two replicas firing together), replayed by run to the
    same counts; the fix keeps its promise in every scenario of the budget."""
    bug = _project(tmp_path, "digest-bug", BUG, unique=False)
    out = tmp_path / "race.toml"
    found = racelab_json(racelab_here("find-race", "--project", str(bug), "--max-examples",
                                      "100", "--out", str(out), "--json"))
    assert found["found"] and found["counts"]["duplicates"] >= 1, found
    assert found["broken"][0].endswith("digests, expected exactly once")
    again = racelab_json(racelab_here("run", "--project", str(bug), "--scenario", str(out),
                                      "--json"))
    assert again["duplicates"] == found["counts"]["duplicates"]
    fix = _project(tmp_path, "digest-fix", FIX, unique=True)
    kept = racelab_json(racelab_here("find-race", "--project", str(fix), "--max-examples", "30",
                                     "--json"))
    assert (kept["found"], kept["examples"]) == (False, 30)


FIXTURE_API = """\
import pytest


def test_dpor_and_a_chosen_seed(racelab):
    found = racelab.explore(preemptions="all", strategy_name="dpor")
    assert found.complete and found.bad
    run = racelab.run(scenario="simultaneous", seed=5)
    assert run.replay.endswith("--scenario simultaneous --replicas 2 --seed 5")


@pytest.mark.racelab_scenarios("staggered")
def test_the_marker_without_the_argument(racelab):
    assert racelab.run().json["scenario"] == "staggered"
"""


def test_the_fixture_takes_dpor_a_seed_and_the_marker_alone_and_says_what_is_missing(tmp_path):
    """explore with another strategy than dfs; a chosen seed in the replay command; the marker
    on a test that takes only `racelab`; and, in a folder with no [tool.racelab], the
    description's own one line."""
    bug = _project(tmp_path, "digest-bug", BUG, unique=False)
    (bug / "tests").mkdir()
    (bug / "tests" / "test_api.py").write_text(FIXTURE_API)
    out = _users_pytest(bug)
    assert out.returncode == 0 and "2 passed" in out.stdout, out.stdout + out.stderr
    (bug / "pyproject.toml").write_text('[project]\nname = "plain"\n')
    out = _users_pytest(bug, "-k", "marker")
    assert "racelab: " in out.stdout and "no [tool.racelab] table" in out.stdout, out.stdout
    assert "During handling" not in out.stdout


IMPORT_LEAK = """\
import psycopg

with psycopg.connect("host=127.0.0.1 dbname=postgres user=postgres", autocommit=True) as c:
    c.execute("CREATE TABLE IF NOT EXISTS racelab_test_leak (id int)")
""" + PLAIN


def test_a_job_that_connects_elsewhere_at_import_writes_nothing_there(tmp_path, pg):
    """The connection the job's module opens when imported (by the child that checks the job,
    before any replica) is refused before its first statement: no table in `postgres`."""
    folder = _plain(tmp_path, IMPORT_LEAK)
    one_line_exit_2(racelab_here("run", "--project", str(folder)),
                    "[tool.racelab] database_env:", "connected to database 'postgres'")
    with psycopg.connect(services.libpq_url(pg.url), autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('racelab_test_leak')").fetchone() == (None,)


def test_a_named_cursors_statement_is_a_step(tmp_path):
    """psycopg's server-side cursor (`conn.cursor(name=…)`) is seen like any other."""
    named = PLAIN.replace(
        'seen = conn.execute("SELECT id FROM digests WHERE day = %s", (now.date(),)).fetchone()',
        'with conn.cursor(name="check") as cur:\n'
        '            cur.execute("SELECT id FROM digests WHERE day = %s", (now.date(),))\n'
        '            seen = cur.fetchone()')
    folder = _plain(tmp_path, named)
    found = racelab_json(racelab_here("explore", "--project", str(folder), "--replicas", "2",
                                      "--preemptions", "1", "--json"))
    assert {o["outcome"] for o in found["outcomes"]} == {"digests 1 per slot",
                                                         "digests 2 per slot"}
