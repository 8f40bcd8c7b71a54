"""Every committed picture reads in an 880 px README column: scaled to 880 px wide, no text in it
is smaller than 11 px."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.helpers import ROOT

COLUMN, SMALLEST = 880, 11.0
PICTURES = sorted((ROOT / "docs" / "pictures").glob("*.svg"))
SVG = "{http://www.w3.org/2000/svg}"


def _px(value: str | None) -> float | None:
    if value is None:
        return None
    m = re.fullmatch(r"\s*([\d.]+)\s*(px)?\s*", value)
    if not m:
        raise AssertionError(f"a size the check cannot read: {value!r}")
    return float(m.group(1))


def smallest_text_at(text: str, width: float = COLUMN) -> float:
    """The smallest font size any text element has once the SVG is scaled to `width` px wide
    (font-size inherited from the nearest ancestor that sets it, SVG's default 16 px)."""
    root = ET.fromstring(text)
    natural = _px(root.get("width")) or float(root.get("viewBox").split()[2])
    scale = width / natural
    found: list[float] = []

    def walk(node: ET.Element, size: float) -> None:
        size = _px(node.get("font-size")) or size
        if node.tag == f"{SVG}text" and "".join(node.itertext()).strip():
            found.append(size * scale)
        for child in node:
            walk(child, size)

    walk(root, 16.0)
    return min(found)


def test_there_are_pictures_to_check():
    assert len(PICTURES) >= 20


@pytest.mark.parametrize("path", PICTURES, ids=lambda p: p.name)
def test_the_committed_picture_reads_at_880_px(path: Path):
    """Scaled to an 880 px column, its smallest text is 11 px or more."""
    assert smallest_text_at(path.read_text()) >= SMALLEST


def test_the_check_sees_a_picture_too_wide_for_the_column():
    """A 2554 px picture with 20 px text shows it at under 7 px in the column: caught."""
    wide = ('<svg xmlns="http://www.w3.org/2000/svg" width="2554" height="100" font-size="20">'
            '<g><text x="0" y="20">A</text></g></svg>')
    assert round(smallest_text_at(wide), 1) == 6.9
    inherited = ('<svg xmlns="http://www.w3.org/2000/svg" width="880" viewBox="0 0 880 9">'
                 '<g font-size="9"><text>tiny</text></g><text font-size="12">ok</text></svg>')
    assert smallest_text_at(inherited) == 9.0
