"""The isolation level as an axis of every run: applied to the replicas' own transactions, a
serialization failure recorded and worded as what it is, and README's table "Would
SERIALIZABLE have saved them?" recomputed cell by cell (no count in it is typed by hand)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from harness import exercises
from harness.engine.explore import dfs, replay, strategy
from harness.engine.explore.steps import Stepper
from harness.engine.model import axes, stages
from harness.engine.model import scenario as scenarios
from harness.engine.run import runner
from harness.engine.views import pictures, tables
from tests.helpers import ROOT, copy_02_without_its_lock, left_by, racelab_json, racelab_pid

LEVELS = ("read-committed", "repeatable-read", "serializable")
NO_ZOMBIE = ROOT / "exercises" / "09-would-serializable-save-them" / "no-zombie.toml"
TABLE_STAGES = ("00", "01", "02", "02-without-lock", "03")
TABLE_SCENARIOS = ("simultaneous", "staggered", "silent-failure", str(NO_ZOMBIE))
EXPLORED_STAGES = ("00", "02-without-lock", "03")


def at(level: str) -> axes.Settings:
    return axes.parse([f"isolation={level}"])


def stage_of(name: str, tmp: Path) -> stages.Stage:
    """A stage of the table: one of the lab's, or exercise 08's copy of 02 without its lock."""
    if name == "02-without-lock":
        folder = tmp / "08-you-are-the-scheduler"
        return stages.from_folder(folder if folder.exists() else copy_02_without_its_lock(tmp))
    return stages.resolve(name)


def scenario_of(name: str) -> scenarios.Scenario:
    return scenarios.resolve(name, "cron")


def measured_cell(stage: stages.Stage, scenario: str, level: str) -> str:
    return tables.marked_cell(runner.run(stage, scenario_of(scenario),
                                         settings=at(level))).plain


def test_the_level_reaches_every_replica_transaction_and_only_the_replicas(pg, tmp_path):
    """A copy of 02 whose tick logs current_setting('transaction_isolation') from inside its
    own transaction: each replica's line says the level the run was made with (read committed
    when none is given), and the run's JSON says it too."""
    folder = copy_02_without_its_lock(tmp_path)
    worker = folder / "myapp" / "worker.py"
    text = worker.read_text()
    said = ('            level = await db.scalar(text("SELECT current_setting('
            "'transaction_isolation')\"))\n"
            '            log.info("isolation %s", level)\n')
    anchor = "            if in_leaderboard_window(now):\n"
    assert anchor in text
    worker.write_text(text.replace(anchor, said + anchor))
    stage = stages.from_folder(folder)
    for given, seen in ((None, "read committed"), ("repeatable-read", "repeatable read"),
                        ("serializable", "serializable")):
        settings = axes.parse(None) if given is None else at(given)
        result = runner.run(stage, scenario_of("simultaneous"), settings=settings)
        logged = [e.detail for e in result.events if e.event == "log"]
        assert logged == [f"info: isolation {seen}"] * 3, (given, logged)
        assert result.to_json(with_events=False)["settings"] == {
            "isolation": given or "read-committed"}


def test_the_issue_cells_as_the_lab_measures_them(pg, tmp_path):
    """02 without its lock, simultaneous: 3 payouts at read committed; at repeatable read and
    serializable 1, the other two transactions aborted (their UPDATE of the one zombie thread
    both close is refused: 40001) and not retried. 01 staggered pays 3 and 02 silent-failure
    "3 partial" at every level: sequential duplicates, no level sees them."""
    lockless = stage_of("02-without-lock", tmp_path)
    assert [measured_cell(lockless, "simultaneous", lv) for lv in LEVELS] == [
        "3", "1 (2 aborted)", "1 (2 aborted)"]
    assert [measured_cell(stages.resolve("01"), "staggered", lv) for lv in LEVELS] == ["3"] * 3
    assert [measured_cell(stages.resolve("02"), "silent-failure", lv) for lv in LEVELS] == [
        "3 partial"] * 3


def test_a_serialization_failure_is_a_failed_op_worded_drawn_and_counted(pg, tmp_path):
    """With no zombie thread to close, the lock-less ticks write no row in common: at
    repeatable read all three pay (write skew), at serializable the COMMITs after the first
    are refused with 40001. The refusal is a `fail` op on the COMMIT with its SQLSTATE, a
    timeline line in the server's words, a label in the picture, and counted in the JSON."""
    lockless = stage_of("02-without-lock", tmp_path)
    rr = runner.run(lockless, scenario_of(str(NO_ZOMBIE)), settings=at("repeatable-read"))
    assert (rr.verdict.runs, rr.aborted) == (3, 0)
    result, pid = racelab_pid("run", str(lockless.path), "--scenario", str(NO_ZOMBIE),
                              "--isolation", "serializable", "--json")
    data = racelab_json(result)
    assert (data["runs"], data["duplicates"], data["aborted"], data["aborted_not_retried"]) \
        == (1, 0, 2, 2)
    refused = [op for op in data["history"] if op["f"] == "commit" and op["type"] == "fail"]
    assert [op["value"]["sqlstate"] for op in refused] == ["40001", "40001"]
    words = [e["detail"] for e in data["events"] if e["event"] == "refused"]
    assert words == ["COMMIT refused: could not serialize access due to read/write "
                     "dependencies among transactions (40001)"] * 2
    assert left_by(pid, pg.url) == []  # nothing of the run is left when the failure ends its ticks
    svg = tmp_path / "refused.svg"
    out, _ = racelab_pid("run", str(lockless.path), "--scenario", str(NO_ZOMBIE),
                         "--isolation", "serializable", "--svg", str(svg))
    assert out.returncode == 0, out.stderr
    picture = svg.read_text()
    assert "COMMIT refused: serialization failure (40001)" in picture
    assert "aborted, not retried" in picture
    assert "serializable · seed 7" in picture


def test_the_retry_the_manual_recommends_keeps_the_count_and_ends_every_tick(pg, tmp_path):
    """Exercise 09's solution: the tick runs its transaction again on 40001. The count stays 1,
    PostgreSQL still aborted transactions, but no tick ends with the error; without the retry
    the check says "not yet"."""
    ex = exercises.find("09")
    exercises.start(ex, tmp_path)
    lockless = copy_02_without_its_lock(tmp_path / "lockless")
    shutil.rmtree(ex.scratch(tmp_path))
    shutil.copytree(lockless, ex.scratch(tmp_path))
    before = exercises.check(ex, tmp_path)
    assert [(m.cell, m.counts) for m in before] == [("3", {}), ("1", {"not_retried": 2})]
    assert not all(m.ok for m in before)
    shutil.rmtree(ex.scratch(tmp_path))
    exercises.solve(ex, tmp_path)
    after = exercises.check(ex, tmp_path)
    assert all(m.ok for m in after), [m.describe() for m in after]
    retried = runner.run(stages.from_folder(ex.scratch(tmp_path)),
                         scenario_of(str(NO_ZOMBIE)), settings=at("serializable"))
    assert retried.aborted >= 2 and retried.not_retried == 0
    assert all(e.outcome == "ok" for e in retried.events if e.event == "tick")


def test_explore_at_serializable_finds_no_double_payout_where_repeatable_read_does(pg,
                                                                                   tmp_path):
    """02 without its lock, no zombie thread, 2 replicas, at most one preemption: at
    repeatable read some schedules pay twice; at serializable none does, and the ones that
    would have are aborted instead."""
    lockless = stage_of("02-without-lock", tmp_path)
    found = {lv: explored(lockless, str(NO_ZOMBIE), lv, 1) for lv in LEVELS[1:]}
    assert found["repeatable-read"]["paid twice"] > 0
    assert found["serializable"]["paid twice"] == 0
    assert found["serializable"]["aborted"] > 0


def explored(stage: stages.Stage, scenario: str, level: str, bound: int) -> dict:
    """One exploration (2 replicas, dfs up to `bound` preemptions), summed up for the table."""
    sc = scenario_of(scenario).with_replicas(2)
    found = strategy.explore(stage, sc, dfs.BoundedDFS(bound), dfs.DFS.name, settings=at(level))
    outcomes = list(found.outcomes.values())
    twice = [o for o in outcomes if o.bad]
    aborted = [o for o in outcomes if "aborted" in o.label]

    def shortest(of):
        best = min(of, key=lambda o: (o.shortest_preemptions, len(o.shortest), o.shortest),
                   default=None)
        return "—" if best is None else best.shortest.replace(" ", "")

    return {"schedules": len(found.explored), "paid twice": sum(o.schedules for o in twice),
            "aborted": sum(o.schedules for o in aborted), "shortest twice": shortest(twice),
            "shortest aborted": shortest(aborted)}


# -- README's picture of a serialization failure, redrawn ----------------------------------------

PICTURE = ROOT / "docs" / "pictures" / "isolation-02-without-lock.serializable.svg"
# 2 replicas, no zombie thread: A reads "no thread" and writes its payout; B runs whole and
# commits; A's INSERT of its summary thread is refused (the shortest such schedule explore finds)
PICTURE_SCHEDULE = "AAAAAAAAAABBBBBBBBBBBBBAA"


def serialization_picture(tmp: Path) -> str:
    stepper = Stepper(replay.Schedule(replay.parse_schedule(PICTURE_SCHEDULE)))
    result = runner.run(stage_of("02-without-lock", tmp),
                        scenario_of(str(NO_ZOMBIE)).with_replicas(2), interleaver=stepper,
                        settings=at("serializable"))
    result.schedule = stepper.schedule()
    return pictures.svg(result)


def words_of(svg: str) -> list[str]:
    """A picture's words, steps' numbers left out: the schedule fixes the order of the
    statements, not of ops that two processes stamp at once (a tick's start beside the other's
    BEGIN), which may move a number or a bar by a step from run to run."""
    return sorted(t for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg) if not t.isdigit())


def test_the_readme_picture_of_a_serialization_failure_is_not_stale(pg, tmp_path):
    """Both reads, the other's COMMIT, the refused INSERT and the abort, as a fresh run of its
    schedule draws them; if not, `python -m tests.lab.test_isolation` redraws it."""
    drawn = serialization_picture(tmp_path)
    for words in ("summary thread absent", "threads INSERT refused: serialization failure "
                  "(40001)", "aborted, not retried", "2 replicas · serializable · seed 7"):
        assert words in drawn
    assert words_of(PICTURE.read_text()) == words_of(drawn), (
        f"{PICTURE.name} is stale: python -m tests.lab.test_isolation redraws it")
    assert f"]({PICTURE.relative_to(ROOT)})" in (ROOT / "README.md").read_text()


# -- README's table, recomputed -----------------------------------------------------------------

def readme_block(name: str) -> str:
    text = (ROOT / "README.md").read_text()
    m = re.search(rf"<!-- {name} -->\n(.*?)\n<!-- /{name} -->", text, re.S)
    assert m, f"README has no {name} block"
    return m.group(1)


def table_rows(tmp: Path) -> list[str]:
    """The matrix, as README's markdown: a row per stage, a column per scenario, each cell
    its three levels' counts (read committed · repeatable read · serializable)."""
    rows = []
    for name in TABLE_STAGES:
        stage = stage_of(name, tmp)
        cells = [" · ".join(measured_cell(stage, sc, lv) for lv in LEVELS)
                 for sc in TABLE_SCENARIOS]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return rows


def explore_rows(tmp: Path) -> list[str]:
    rows = []
    for name in EXPLORED_STAGES:
        stage = stage_of(name, tmp)
        for scenario, said in (("simultaneous", "simultaneous"),
                               (str(NO_ZOMBIE), "no zombie thread")):
            for level in LEVELS:
                e = explored(stage, scenario, level, 2)
                rows.append(f"| {name} | {said} | {axes.label('isolation', level)} | "
                            f"{e['schedules']} | {e['paid twice']} | {e['aborted']} | "
                            f"`{e['shortest twice']}` | `{e['shortest aborted']}` |"
                            .replace("`—`", "—"))
    return rows


@pytest.mark.slow
@pytest.mark.xdist_group("isolation-table")
def test_readme_isolation_matrix_is_what_the_lab_measures(pg, tmp_path):
    assert readme_block("isolation:matrix").splitlines()[2:] == table_rows(tmp_path)


@pytest.mark.slow
@pytest.mark.xdist_group("isolation-explore")
def test_readme_isolation_explorations_are_what_the_lab_measures(pg, tmp_path):
    assert readme_block("isolation:explore").splitlines()[2:] == explore_rows(tmp_path)


if __name__ == "__main__":  # redraw README's picture of a serialization failure
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        PICTURE.write_text(serialization_picture(Path(folder)))
    print(f"drew {PICTURE.relative_to(ROOT)}")
