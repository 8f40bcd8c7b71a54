"""A scenario file read as data: a regular file, small, UTF-8, valid TOML or JSON, not deep.

Whatever else it is (a FIFO, /dev/zero, a folder, a huge or binary file, nesting 100k deep, a
JSON object with a key twice) is one UserError naming the file, raised before it is parsed and,
for what is not a regular file, before it is opened.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from harness.engine.model import limits
from harness.errors import UserError


def read(p: Path) -> dict[str, Any]:
    """The file's table (a JSON file may be find-race's output: its `scenario` is taken)."""
    text = _text(p)
    try:
        data = _json(text) if p.suffix == ".json" else tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{p}: not valid TOML: {e}") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{p}: not valid JSON: {e}") from None
    except RecursionError:
        raise UserError(f"{p}: nested deeper than {limits.MAX_DEPTH} levels") from None
    except ValueError as e:  # a JSON number of thousands of digits, a key given twice
        raise UserError(f"{p}: not a scenario: {e}") from None
    if p.suffix == ".json":
        if isinstance(data, dict) and isinstance(data.get("scenario"), dict):
            data = data["scenario"]
        if not isinstance(data, dict):
            raise UserError(f"{p}: a JSON scenario is one object (or find-race's output)")
    if limits.depth(data) > limits.MAX_DEPTH:
        raise UserError(f"{p}: nested deeper than {limits.MAX_DEPTH} levels")
    return data


def _text(p: Path) -> str:
    """The file's text: stat first, so a FIFO or a device is refused without being opened."""
    try:
        st = os.stat(p)
        if not stat.S_ISREG(st.st_mode):
            raise UserError(f"{p}: not a regular file; a scenario is a .toml or .json file")
        if st.st_size > limits.MAX_FILE_BYTES:
            raise UserError(f"{p}: {st.st_size:,} bytes; a scenario file is at most "
                            f"{limits.MAX_FILE_BYTES:,}")
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)  # swapped for a FIFO since: no hang
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise UserError(f"{p}: not a regular file; a scenario is a .toml or .json file")
            body = f.read(limits.MAX_FILE_BYTES + 1)
    except OSError as e:
        raise UserError(f"{p}: cannot read scenario file: {e.strerror}") from None
    if len(body) > limits.MAX_FILE_BYTES:
        raise UserError(f"{p}: more than {limits.MAX_FILE_BYTES:,} bytes; a scenario file is "
                        f"at most {limits.MAX_FILE_BYTES:,}")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{p}: not UTF-8 text (byte {e.start})") from None


def _json(text: str) -> Any:
    return json.loads(text, object_pairs_hook=_unique)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise ValueError(f"the key {key!r} is given twice")
        data[key] = value
    return data
