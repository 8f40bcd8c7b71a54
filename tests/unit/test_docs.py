"""The docs hold together: stage READMEs share their headings and name real tests for their
claims, links resolve, shell lines use the project's own .venv, and the workshop agenda says the
same in English and Spanish."""

from __future__ import annotations

import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from harness.engine.model import stages
from tests.helpers import ROOT, dry_runs

HEADINGS = ["What it adds", "What it fixes", "What still escapes", "Run it", "Measured results"]
SKIP_DIRS = {".venv", "scratch", ".pytest_cache", ".hypothesis", "cdk.out", "build",
             "node_modules", ".git"}
STAGE_READMES = [s.path / "README.md" for s in stages.all_stages()]
TEST_NAME = re.compile(r"`(test_\w+(?:\[[^\]`]+\])?)`")


def _docs() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.md")
                  if not SKIP_DIRS & set(p.relative_to(ROOT).parts) and "egg-info" not in str(p))


def _sections(path: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    heading = None
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
            found[heading] = ""
        elif heading:
            found[heading] += line + "\n"
    return found


def _code_lines(path: Path) -> list[str]:
    """The lines of the fenced blocks that hold shell lines: those without a language (or
    marked sh); a ```text picture or a ```python file is not one."""
    lines, inside, shell = [], False, False
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("```"):
            inside = not inside
            shell = line.strip().removeprefix("```") in ("", "sh", "bash", "shell", "console")
        elif inside and shell:
            lines.append(line)
    return lines


@cache
def _collected() -> set[str]:
    """Every test id pytest collects, with and without its parameters."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                          "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    ids = {line.split("::")[-1] for line in out.stdout.splitlines() if "::" in line}
    return ids | {i.split("[")[0] for i in ids}


@pytest.mark.parametrize("readme", STAGE_READMES, ids=lambda p: p.parent.name)
def test_stage_readmes_share_the_same_headings(readme: Path) -> None:
    """what it adds · what it fixes · what still escapes · run it · measured results."""
    assert list(_sections(readme)) == HEADINGS


@pytest.mark.parametrize("readme", STAGE_READMES, ids=lambda p: p.parent.name)
def test_every_claim_in_a_stage_readme_names_a_test(readme: Path) -> None:
    """Each bullet or paragraph of what it fixes / what still escapes names the test that
    proves it; only "Nothing" and notes marked *Outside the lab* name none."""
    sections = _sections(readme)
    for heading in ("What it fixes", "What still escapes"):
        chunks = re.split(r"\n\s*\n|\n(?=- )", sections[heading].strip())
        for chunk in chunks:
            if chunk.startswith(("Nothing", "*Outside the lab:*")):
                continue
            assert TEST_NAME.search(chunk), f"{readme.parent.name} · {heading}: {chunk[:70]}…"


def test_every_test_the_docs_name_exists() -> None:
    """A test named in a README, the workshop or an exercise is one pytest collects."""
    named = {(p.relative_to(ROOT).as_posix(), t) for p in _docs()
             for t in TEST_NAME.findall(p.read_text())}
    assert len(named) > 30
    missing = sorted((doc, t) for doc, t in named if t not in _collected())
    assert missing == []


def test_every_relative_link_in_the_docs_resolves() -> None:
    """[text](path) points at a file or folder in the repo; the lab's private notes are not."""
    broken = []
    for doc in _docs():
        text = doc.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not (doc.parent / target.split("#")[0]).exists():
                broken.append((doc.relative_to(ROOT).as_posix(), target))
        for private in ("STORY.md", "DESIGN.md", "STYLE.md"):
            if private in text:
                broken.append((doc.relative_to(ROOT).as_posix(), private))
    assert broken == []


def test_shell_lines_in_docs_use_the_projects_venv_or_make() -> None:
    """No fenced shell line calls a bare `racelab` (it is only on PATH inside the venv)."""
    bare = [(doc.relative_to(ROOT).as_posix(), line) for doc in _docs()
            if doc != ROOT / "README.md"  # its Commands block is a synopsis, not a shell line
            for line in _code_lines(doc) if re.match(r"\s*(\$\s+)?racelab\b", line)]
    assert bare == []


def _agenda(path: Path) -> tuple[list[str], list[str]]:
    """The shell lines of a workshop file, and its durations in minutes, in order."""
    text = path.read_text()
    return _code_lines(path), re.findall(r"\b(\d+(?:\.\d+)? (?:min|s))\b", text)


def test_workshop_in_english_and_spanish_gives_the_same_commands_and_durations() -> None:
    """WORKSHOP.es.md is a translation: same commands in its code blocks, same durations."""
    en, es = _agenda(ROOT / "WORKSHOP.md"), _agenda(ROOT / "WORKSHOP.es.md")
    assert len(en[0]) > 20 and len(en[1]) > 8
    assert es == en


def test_every_exercise_has_its_task_in_spanish_with_the_same_commands() -> None:
    """The Spanish session gets Spanish tasks: README.es.md beside each README.md, with the
    same commands in its code blocks and the same sections."""
    folders = sorted(p for p in (ROOT / "exercises").glob("[0-9][0-9]-*") if p.is_dir())
    assert len(folders) == 9
    for folder in folders:
        en, es = (folder / "README.md").read_text(), (folder / "README.es.md").read_text()
        assert _code_lines(folder / "README.es.md") == _code_lines(folder / "README.md"), folder
        assert en.count("\n## ") == es.count("\n## "), folder


def test_every_make_target_the_workshop_names_has_a_recipe() -> None:
    """`make exercise-01`, `make diff-alerts-00-01`, …: each runs a command (dry run)."""
    text = (ROOT / "WORKSHOP.md").read_text() + (ROOT / "exercises" / "README.md").read_text()
    targets = sorted(set(re.findall(r"\bmake ([a-z][a-z0-9-]*[a-z0-9])\b(?!-)", text)))
    assert {"exercise-01", "check-exercise-06", "diff-alerts-00-01", "diff-02-03"} <= set(targets)
    for target, out in dry_runs(targets):
        assert (target, out.returncode) == (target, 0), out.stderr
        assert out.stdout.strip() and "Nothing to be done" not in out.stdout, target


def test_stage_diffs_show_the_files_a_stage_adds() -> None:
    """diff -N: 03's new runs.py, which holds the INSERT … ON CONFLICT, is in diff-02-03, and
    alerts-01's new claims.py in diff-alerts-00-01 (not only "Only in …")."""
    fix = {"diff-02-03": ("03-claim-row/myapp/runs.py", "ON CONFLICT (name, key) DO NOTHING"),
           "diff-alerts-00-01": ("alerts/01-redis-claim/myapp/claims.py", "nx=True")}
    for target, (new_file, line) in fix.items():
        out = subprocess.run(["make", "-s", target], cwd=ROOT, capture_output=True, text=True)
        assert "Only in" not in out.stdout, target
        assert re.search(rf"^\+\+\+ {re.escape(new_file)}\s", out.stdout, re.M), target
        assert re.search(rf"^\+.*{re.escape(line)}", out.stdout, re.M), target


def test_plain_make_lists_the_targets_and_installs_nothing() -> None:
    """`make` alone is `make help`: the targets, and no pip (the full set is 782 MB)."""
    dry = subprocess.run(["make", "-n"], cwd=ROOT, capture_output=True, text=True)
    assert "pip" not in dry.stdout and "venv" not in dry.stdout
    out = subprocess.run(["make", "-s"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    listed = re.findall(r"^  ([a-z][A-Za-z0-9-]*)", out.stdout, re.M)
    assert {"demo", "setup", "test", "lint", "diff-AA-BB", "exercise-NN"} <= set(listed)


def test_stage_diffs_show_code_only() -> None:
    """make diff-AA-BB and diff-alerts-AA-BB compare code: no README, picture or template."""
    for target in ("diff-02-03", "diff-04-05", "diff-alerts-00-01"):
        out = subprocess.run(["make", "-s", target], cwd=ROOT, capture_output=True, text=True)
        files = re.findall(r"^\+\+\+ (\S+)", out.stdout, re.M)
        assert files and all(f.endswith(".py") for f in files), (target, files)
