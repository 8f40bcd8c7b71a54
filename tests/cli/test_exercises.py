"""The workshop's exercises check themselves: each starting point fails its check, its solution
passes it, and a reset brings the starting stage back. Checks run real scenarios on a copy."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import exercises
from harness.errors import UserError
from tests.helpers import ROOT, racelab_here

ALL = exercises.all_exercises()
# What each check measures on the untouched start, and after its solution (one cell per want).
MEASURED = {
    "01-session-lock": (["3", "2"], ["1", "0 (1 missed)"]),
    "02-claim-after-payout": (["1"], ["3"]),
    "03-no-advisory-lock": (["1 · claim lost 0 · lock refused 2"],
                            ["1 · claim lost 2 · lock refused 0"]),
    "04-post-thread-raises": (["1 partial"], ["0 (1 missed)"]),
    "05-execution-id": (["1"], ["2"]),
    "06-alerts-fail-closed": (["1 extra, accepted"], ["3 missed"]),
    "07-blocking-lock": (["1"], ["3"]),
    "08-you-are-the-scheduler": (["1", "1"], ["3", "1"]),
    "09-would-serializable-save-them": (["1", "1 · not retried 0"], ["3", "1 · not retried 0"]),
}


def _cells(measured: list[exercises.Measured]) -> list[str]:
    return [m.describe().split(": ", 1)[1].split("   (")[0] for m in measured]


def test_there_are_at_least_six_exercises_each_with_readme_patch_and_check() -> None:
    """Every exercise folder has its task, its solution and what its check wants."""
    assert [ex.name for ex in ALL] == sorted(MEASURED)
    for ex in ALL:
        assert (ex.folder / "README.md").is_file()
        assert (ex.folder / "solution.patch").read_text().startswith("--- a/")


@pytest.mark.parametrize("ex", ALL, ids=lambda ex: ex.name)
def test_start_fails_the_check_the_solution_passes_it_and_reset_restores_the_start(
        ex: exercises.Exercise, tmp_path: Path) -> None:
    """Untouched start: "not yet" with the stage's own cell; solved: "pass"; reset: the stage."""
    before, after = MEASURED[ex.name]
    scratch, copied = exercises.start(ex, tmp_path)
    assert copied
    first = exercises.check(ex, tmp_path)
    assert (_cells(first), all(m.ok for m in first)) == (before, False)

    exercises.solve(ex, tmp_path)
    solved = exercises.check(ex, tmp_path)
    assert (_cells(solved), all(m.ok for m in solved)) == (after, True)

    assert exercises.reset(ex, tmp_path) == scratch
    assert exercises.same_tree(ex.start.path, scratch)


def test_start_keeps_the_attendees_edits_and_the_shipped_stage_is_never_touched(
        tmp_path: Path) -> None:
    """A second `make exercise-NN` keeps the edits; editing the copy leaves the stage alone."""
    ex = exercises.find("01")
    scratch, _ = exercises.start(ex, tmp_path)
    worker = scratch / "myapp" / "worker.py"
    worker.write_text(worker.read_text() + "# mine\n")
    assert exercises.start(ex, tmp_path) == (scratch, False)
    assert worker.read_text().endswith("# mine\n")
    assert not (ex.start.path / "myapp" / "worker.py").read_text().endswith("# mine\n")


def test_solving_twice_is_one_line_saying_it_is_applied(tmp_path: Path) -> None:
    """The instructor's second solve says the patch is in, instead of a git error."""
    ex = exercises.find("02")
    exercises.solve(ex, tmp_path)
    with pytest.raises(UserError, match="already applied"):
        exercises.solve(ex, tmp_path)


def test_make_targets_copy_check_solve_and_reset_a_scratch_copy(tmp_path: Path) -> None:
    """The Makefile's exercise targets drive the scratch folder (here a temporary one, so a
    test run never resets an attendee's edits in exercises/scratch/, which git ignores)."""
    env = {**os.environ, "RACELAB_EXERCISES_SCRATCH": str(tmp_path)}

    def make(target: str, *options: str) -> list[str]:  # "not yet" is an outcome: exit 0
        done = _make(target, env, *options)
        assert done.returncode == 0 and "Error" not in done.stderr, done.stderr
        return done.stdout.splitlines()

    assert make("exercise-04")[0].startswith(f"copied {tmp_path / '04-post-thread-raises'}")
    untouched = make("check-exercise-04")
    assert untouched[-2] == "  silent-failure: 1 partial"  # predict first: no answer shown yet
    assert untouched[-1].startswith("not yet: your copy is still 03-claim-row. Write down")
    assert make("check-exercise-04", "SHOW=1")[-2:] == [
        "  silent-failure: 1 partial   (the exercise wants 0 (1 missed))", "not yet"]
    make("solve-exercise-04")
    assert make("check-exercise-04")[-2:] == ["  silent-failure: 0 (1 missed)", "pass"]
    make("reset-exercise-04")
    assert make("check-exercise-04")[-1].startswith("not yet")
    ignored = subprocess.run(["git", "check-ignore", "-q", "exercises/scratch/04-x/myapp"],
                             cwd=ROOT)
    assert ignored.returncode == 0


def test_check_exercise_01_on_the_untouched_copy_says_not_yet_and_exits_1(tmp_path: Path
                                                                        ) -> None:
    """A script or a CI step can use the check: "not yet" exits 1 from the module (make reads
    it as the outcome it is, with no "Error 1" of its own)."""
    env = {**os.environ, "RACELAB_EXERCISES_SCRATCH": str(tmp_path)}
    assert _make("exercise-01", env).returncode == 0
    done = subprocess.run([sys.executable, "-m", "harness.exercises", "check", "01"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 1 and done.stdout.splitlines()[-1].startswith("not yet")


def _make(target: str, env: dict[str, str], *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", target, *options], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=env)


def _edited(ex: exercises.Exercise, root: Path, path: str, old: str, new: str) -> None:
    """The scratch copy of `ex` with `old` replaced by `new` in myapp/`path`."""
    exercises.solve(ex, root)
    source = ex.scratch(root) / "myapp" / path
    text = source.read_text()
    assert old in text
    source.write_text(text.replace(old, new, 1))


def test_a_tick_that_crashed_fails_the_check_and_shows_where(tmp_path: Path) -> None:
    """Exercise 04 solved but for a typo (`Nonee`): the slot is missed as the exercise wants, yet
    by a NameError, not the LookupError it asks for: "not yet", with the file and line."""
    ex = exercises.find("04")
    _edited(ex, tmp_path, "services/bot_service.py",
            '    bot = await db.scalar(select(User).where(User.is_bot.is_(True)))\n',
            '    bot = await db.scalar(select(User).where(User.is_bot.is_(True)))\n'
            '    _ = Nonee\n')
    [m] = exercises.check(ex, tmp_path)
    assert m.cell == "0 (1 missed)" and not m.ok
    assert any("myapp/services/bot_service.py:" in e and "NameError: name 'Nonee'" in e
               for e in m.errors), m.errors
    assert "a tick raised an error: A: " in m.describe()


def test_exercise_06_calls_its_claim_as_it_likes_and_a_typo_fails_the_check(tmp_path: Path
                                                                           ) -> None:
    """The lab's wrapper around claim() takes the call as the app makes it (keywords too); a
    `return Flase` is a NameError the check shows, not a pass."""
    ex = exercises.find("06")
    _edited(ex, tmp_path, "claims.py", "            return False\n",
            "            return Flase\n")
    [m] = exercises.check(ex, tmp_path)
    assert not m.ok and any("NameError: name 'Flase'" in e for e in m.errors), m.errors
    shutil.rmtree(ex.scratch(tmp_path))
    exercises.solve(ex, tmp_path)
    alerts = ex.scratch(tmp_path) / "myapp" / "alerts.py"
    text = alerts.read_text()
    call = re.search(r"await claim\(([^,()]+), ([^,()]+), owner=", text)
    assert call, "alerts.py calls claim(key, window, owner=…)"
    alerts.write_text(text.replace(call.group(0), f"await claim(key={call.group(1)}, "
                                                  f"window={call.group(2)}, owner="))
    [m] = exercises.check(ex, tmp_path)
    assert (m.ok, m.errors) == (True, ())


def test_exercise_08_fails_when_the_sentinel_goes_with_the_lock(tmp_path: Path) -> None:
    """Deleting the lock and the sentinel pays 3 under simultaneous too; staggered tells them
    apart (3, not 1)."""
    ex = exercises.find("08")
    _edited(ex, tmp_path, "leaderboard.py", "is not None:\n        return\n",
            "is None:\n        pass\n")
    cells = [m.cell for m in exercises.check(ex, tmp_path)]
    assert cells == ["3", "3"]


def test_racelab_runs_a_copied_stage_folder_on_the_track_it_started_from(tmp_path: Path) -> None:
    """`racelab run PATH` runs a copy; its .racelab-from decides the track."""
    ex = exercises.find("06")
    scratch, _ = exercises.start(ex, tmp_path)
    done = racelab_here("run", str(scratch), "--scenario", "two-replicas", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert (data["stage"], data["track"], data["sent"]) == (scratch.name, "alerts", 1)


def test_a_folder_without_racelab_from_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """A copied folder must say where it started; otherwise one line and exit code 2."""
    (tmp_path / "myapp").mkdir()
    done = racelab_here("run", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and ".racelab-from" in done.stderr



def test_exercise_06_solved_logs_that_nobody_goes_ahead_and_nothing_goes_out(tmp_path):
    """Failing closed, the claim's warning no longer says "going ahead without it": the alert and
    both 2-minute windows' sandbox listings (14:00 and 14:10) are held back, 3 missed."""
    copy = exercises.solve(exercises.find("06"), tmp_path)
    done = racelab_here("run", str(copy), "--scenario", "redis-down", "--timeline")
    assert done.returncode == 0, done.stderr
    assert "going ahead without it" not in done.stdout
    assert done.stdout.count("holding back, so nobody goes ahead") == 4  # 2 ticks × 2 claims
    assert "alerts sent 0 of 1 expected · sandboxes listed 0 of 2 expected" in done.stdout


def test_a_task_that_exits_with_an_error_shows_what_it_printed(tmp_path: Path) -> None:
    """Exercise 05 half done: the schedule passes --run-id, the jobs CLI does not take it. The
    tasks exit 2, and the check shows argparse's own line, not only a missed slot."""
    ex = exercises.find("05")
    scratch, _ = exercises.start(ex, tmp_path)
    template = scratch / "infra" / "template.json"
    text = template.read_text()
    old = '\\"<aws.scheduler.scheduled-time>\\"]'
    assert old in text
    template.write_text(text.replace(old, '\\"<aws.scheduler.scheduled-time>\\", \\"--run-id\\", '
                                          '\\"<aws.scheduler.execution-id>\\"]'))
    [m] = exercises.check(ex, tmp_path)
    assert not m.ok
    assert any("exited 2" in e and "unrecognized arguments: --run-id" in e for e in m.errors), \
        m.errors


def test_reset_is_whole_even_when_the_old_copy_cannot_be_removed(tmp_path: Path,
                                                                  monkeypatch) -> None:
    """A copy with a file that cannot be deleted: the reset still leaves the starting stage
    whole (every file, .racelab-from too), and the old copy aside for the attendee, named
    (issue 42, item 14: before, half the copy was gone and `exercise-01` kept it)."""
    ex = exercises.find("01")
    scratch, _ = exercises.start(ex, tmp_path)
    (scratch / "myapp" / "worker.py").write_text("# mine\n")
    removed = shutil.rmtree

    def stubborn(path, ignore_errors=False, **kw):  # leaves one file, as chattr +i would
        for p in sorted(Path(path).rglob("*"), reverse=True):
            if p.name != "db.py":
                p.unlink() if p.is_file() else None
        if not ignore_errors:
            raise OSError("Operation not permitted")

    monkeypatch.setattr(exercises.shutil, "rmtree", stubborn)
    assert exercises.reset(ex, tmp_path) == scratch
    monkeypatch.setattr(exercises.shutil, "rmtree", removed)
    assert exercises.same_tree(ex.start.path, scratch)
    [old] = exercises.reset_leftover(ex, tmp_path)
    assert (old / "myapp" / "db.py").exists()
