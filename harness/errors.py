"""Errors the CLI turns into one line on stderr and exit code 2."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class UserError(Exception):
    """Bad input or a missing service: the user can fix it; no traceback is shown."""


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """' (did you mean 'staggered'?)' for a near miss of one of `choices`, else ''."""
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
