"""`make` on a machine whose Python is too old: one line, exit 2, before anything installs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.helpers import ROOT

MAKE = shutil.which("make")


def _fake_python(bin_dir: Path, name: str, version: str | None) -> None:
    """A `name` on PATH that reports `version` like Python would (None: fails like a pyenv
    shim for a version that is not installed)."""
    script = bin_dir / name
    if version is None:
        script.write_text(f"#!/bin/bash\necho 'pyenv: {name}: command not found' >&2\nexit 127\n")
    else:
        script.write_text(f"#!/bin/bash\n[ \"$1\" = -c ] && echo {version} && exit 0\n"
                          f"echo 'Python {version}'\n")
    script.chmod(0o755)


def _project_copy(tmp_path: Path) -> Path:
    project = tmp_path / "racelab"
    project.mkdir()
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, project / name)
    shutil.copytree(ROOT / "scripts", project / "scripts")
    return project


def test_make_demo_with_python_3_9_says_what_to_install_and_exits_2(tmp_path):
    """Only python3 3.9 (and a pyenv shim for 3.12) on PATH: `make demo` prints one line naming
    python3 3.9.18 and Python 3.11, exits 2, and creates no .venv (pip never ran)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_python(bin_dir, "python3", "3.9.18")
    _fake_python(bin_dir, "python3.12", None)
    project = _project_copy(tmp_path)
    out = subprocess.run([MAKE, "demo"], cwd=project, capture_output=True, text=True,
                         env={"PATH": str(bin_dir), "HOME": str(tmp_path)})
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "racelab needs Python 3.11 or newer and found only python3 3.9.18" in lines[0]
    assert "install Python 3.12" in lines[0]
    assert out.stdout == ""
    assert (project / ".venv").exists() is False


def test_find_python_takes_the_newest_named_python_that_is_3_11_or_later(tmp_path):
    """python3.13 missing, python3.12 a broken shim, python3.11 real, python3 3.9: the pick is
    python3.11."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_python(bin_dir, "python3.12", None)
    _fake_python(bin_dir, "python3.11", "3.11.9")
    _fake_python(bin_dir, "python3", "3.9.18")
    out = subprocess.run(["/bin/bash", str(ROOT / "scripts" / "find-python")],
                         capture_output=True, text=True, env={"PATH": str(bin_dir)})
    assert (out.returncode, out.stdout, out.stderr) == (0, "python3.11\n", "")


def _browser_tests_without_chromium(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """The report page's browser test, run by pytest with an empty PATH (no Chromium on it)."""
    import os
    import sys

    empty = tmp_path / "bin"
    empty.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rsf", "-p", "no:cacheprovider",
         "tests/cli/test_report_page.py"], cwd=ROOT, capture_output=True, text=True,
        timeout=120, env={**os.environ, "PATH": str(empty), "CI": "", **env})


def test_without_chromium_the_browser_tests_are_skipped_with_one_line_saying_why(tmp_path):
    """A fresh laptop without Chromium: `make test` passes, reporting the browser test skipped."""
    done = _browser_tests_without_chromium(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SKIPPED [1] tests/cli/test_report_page.py" in done.stdout
    assert "headless Chromium is not on PATH (apt-get install -y chromium)" in done.stdout
    assert "1 skipped" in done.stdout


def test_under_ci_true_a_missing_chromium_fails_the_browser_tests(tmp_path):
    """`.ci/run` sets CI=true: there the browser tests are required, never skipped."""
    done = _browser_tests_without_chromium(tmp_path, CI="true")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "CI=true requires the browser tests" in done.stdout
    assert "1 error" in done.stdout
