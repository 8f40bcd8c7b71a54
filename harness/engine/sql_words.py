"""What the seams read off a statement: its words for a person choosing who moves next, and the
first value it returned."""

from __future__ import annotations

import re


def shortened(sql: str, width: int = 72) -> str:
    """A statement on one line for a person choosing who moves next: parameters by name, a
    long column list elided."""
    text = re.sub(r"%\((\w+)\)s", r":\1", " ".join(sql.split()))
    if len(text) > width and (m := re.match(r"(SELECT) .+? (FROM .*)", text, re.I)):
        text = f"{m.group(1)} … {m.group(2)}"
    return text if len(text) <= width else text[:width - 1] + "…"


def first_value(cursor) -> object:
    """The first column of the first row, without consuming it (SQLAlchemy buffers async rows)."""
    rows = getattr(cursor, "_rows", None)
    if rows:
        return rows[0][0]
    return None
