"""An attendee's own mistake in a scratch copy is reported as theirs: the file, the line and
Python's message, exit 2, and no traceback of the harness's (issue 19, finding 12)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from harness import exercises
from tests.helpers import ROOT, one_line_exit_2, racelab, racelab_here


def _broken_copy(tmp_path: Path, file: str, text: str) -> tuple[Path, int]:
    """Exercise 01's scratch copy with `text` appended to myapp/`file`; the line it starts on."""
    scratch, _ = exercises.start(exercises.find("01"), tmp_path)
    path = scratch / "myapp" / file
    line = len(path.read_text().splitlines()) + 2
    path.write_text(path.read_text() + "\n" + text)
    return scratch, line


@pytest.mark.parametrize(("file", "text", "message"), [
    ("leaderboard.py", "def oops(:\n    pass\n", "SyntaxError: invalid syntax"),
    ("models.py", "def oops(:\n    pass\n", "SyntaxError: invalid syntax"),
    ("leaderboard.py", "undefined_name\n", "NameError: name 'undefined_name' is not defined"),
])
def test_an_error_in_the_attendees_copy_names_their_file_and_line(tmp_path, file, text,
                                                                    message):
    """racelab run on the broken copy: one line, FILE:LINE: message, exit 2."""
    scratch, line = _broken_copy(tmp_path, file, text)
    where = f"{(scratch / 'myapp' / file).resolve()}:{line}: {message}"
    one_line_exit_2(racelab_here("run", str(scratch)), where)


def test_make_check_exercise_01_on_a_syntax_error_prints_no_traceback(tmp_path):
    """make check-exercise-01 with a syntax error in the copy: exit 2, the attendee's line."""
    scratch, line = _broken_copy(tmp_path, "leaderboard.py", "def oops(:\n")
    done = subprocess.run(["make", "-s", "check-exercise-01"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300,
                          env={**os.environ, "RACELAB_EXERCISES_SCRATCH": str(tmp_path)})
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    ours = [x for x in done.stderr.splitlines() if x.startswith("racelab: ")]
    assert ours == [f"racelab: replica A could not start the stage: "
                    f"{(scratch / 'myapp' / 'leaderboard.py').resolve()}:{line}: "
                    "SyntaxError: invalid syntax"]


def _tick_starts_with(tmp_path: Path, code: str) -> tuple[Path, int]:
    """Exercise 01's scratch copy whose tick begins with `code`; the line it is on."""
    scratch, _ = exercises.start(exercises.find("01"), tmp_path)
    path = scratch / "myapp" / "worker.py"
    anchor = ('    """One pass of the loop: decide from the clock what is due, in one '
              'transaction."""\n')
    text = path.read_text()
    assert anchor in text
    path.write_text(text.replace(anchor, anchor + f"    {code}\n"))
    line = path.read_text().splitlines().index(f"    {code}") + 1
    return scratch, line


def test_sys_exit_in_the_attendees_tick_is_their_line_not_an_internal_error(tmp_path):
    """`sys.exit(0)` at the top of `tick`: the attendee's file and line, what it does, exit 2
    (was: internal error, ReplicaDied)."""
    scratch, line = _tick_starts_with(tmp_path, "import sys; sys.exit(0)")
    one_line_exit_2(racelab_here("run", str(scratch)),
                    f"{(scratch / 'myapp' / 'worker.py').resolve()}:{line}: SystemExit: "
                    "sys.exit(0) ends the replica's process", stdout=None)


def test_os_exit_in_the_attendees_tick_is_their_line_not_an_internal_error(tmp_path):
    """`os._exit(3)` at the top of `tick` still ends the process, but the harness is told the
    file and line first: one line, exit 2 (issue 42, item 11; was: internal error)."""
    scratch, line = _tick_starts_with(tmp_path, "import os; os._exit(3)")
    one_line_exit_2(racelab_here("run", str(scratch)),
                    f"{(scratch / 'myapp' / 'worker.py').resolve()}:{line}: os._exit(3) ends "
                    "the replica's process", stdout=None)


@pytest.mark.slow
def test_an_endless_tick_is_the_stages_in_one_line(tmp_path):
    """`while True: pass` in `tick`: after the tick limit (60 s), one line saying the stage's
    code neither returned nor raised, exit 2 (was: internal error)."""
    scratch, _ = _tick_starts_with(tmp_path, "while True: pass")
    out = racelab("run", str(scratch), "--scenario", "simultaneous", timeout=300)
    one_line_exit_2(out, "did not finish its tick in 60 s", "neither returned nor raised",
                    stdout=None)
