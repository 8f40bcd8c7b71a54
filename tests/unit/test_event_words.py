"""An event's `detail` is words for people; code decides on data (Event.data, the history's
ops), never on those words. Only the modules that turn events into text may read `detail`;
the others that still match on it are listed here, and the list may only shrink."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import ROOT

HARNESS = ROOT / "harness"
FORMATTING = {  # they turn an event into text: reading its words is their job
    "harness/engine/model/history.py", "harness/engine/views/tables.py",
    "harness/engine/run/tick_text.py",
}
STILL_MATCHING = {  # issue 18's remaining debt: each reads an event's words back
    "harness/exercises.py",  # counts events by (event, detail)
}


def reads_of_detail(path: Path) -> list[int]:
    """Lines where the module reads an attribute called `detail` (not where it sets one)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr == "detail"
            and isinstance(node.ctx, ast.Load)]


def matching_modules(root: Path) -> set[str]:
    return {str(p.relative_to(ROOT)) for p in root.rglob("*.py")
            if reads_of_detail(p)} - FORMATTING


def test_no_module_outside_the_text_formatting_decides_on_an_events_words():
    assert matching_modules(HARNESS) <= STILL_MATCHING


def test_a_module_that_stopped_matching_leaves_the_list():
    assert matching_modules(HARNESS) >= STILL_MATCHING


def test_the_check_sees_a_module_matching_on_the_words(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def killed(e):\n    return 'SIGKILL' in e.detail\n")
    assert reads_of_detail(bad) == [2]
    (tmp_path / "good.py").write_text("def killed(e):\n    return e.data['on']\n")
    assert reads_of_detail(tmp_path / "good.py") == []
