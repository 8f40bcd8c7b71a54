"""What one step touches, read from its statement before it runs: the tables it reads, the
tables whose rows it writes or locks, the advisory-lock keys it takes, or that it ends its
transaction. The reduction (harness.engine.explore.dpor) orders two steps of different
replicas only when what they touch can make them see, block or exclude each other; a statement
this module cannot read (a CTE, a function of unknown effect, a Redis command) touches
everything, so it is ordered against every step.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Row = tuple[tuple[str, str | None], ...]  # an inserted row: (column, value as text or None)


@dataclass(frozen=True)
class Access:
    reads: frozenset[str] = frozenset()  # tables it reads without locking a row
    writes: frozenset[str] = frozenset()  # tables whose rows it updates, deletes or locks
    inserts: frozenset[str] = frozenset()  # tables it inserts rows into
    rows: tuple[Row, ...] | None = ()  # the rows it inserts (None: they could not be read)
    keys: frozenset[str] = frozenset()  # advisory-lock keys ("*": a key it could not read)
    ends: bool = False  # COMMIT or ROLLBACK: what its transaction wrote and locked is let go
    unknown: bool = False  # touches what this module cannot tell: anything


EVERYTHING = Access(unknown=True)
ENDS = Access(ends=True)

_WORD = r'"?([A-Za-z_][\w$]*)"?(?:\s*\.\s*"?([A-Za-z_][\w$]*)"?)?'
_TABLES = re.compile(rf"\b(?:FROM|JOIN|UPDATE|INTO|USING)\s+(?:ONLY\s+)?{_WORD}", re.I)
_TARGET = re.compile(rf"^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(?:ONLY\s+)?{_WORD}", re.I)
_LOCKING = re.compile(r"\bFOR\s+(?:NO\s+KEY\s+UPDATE|UPDATE|KEY\s+SHARE|SHARE)\b", re.I)
_ADVISORY = re.compile(r"\bpg_(?:try_)?advisory(?:_xact)?_(?:un)?lock(?:_shared)?\s*"
                       r"\(((?:[^()]|%\(\w+\)s)*)\)", re.I)
_PLACEHOLDER = re.compile(r"^%\((\w+)\)s$|^\$(\d+)$|^:(\w+)$|^%s$|^\?$")
# functions whose effect outlives a statement's snapshot or reaches past the tables it names
_UNKNOWN = re.compile(r"\b(?:nextval|setval|pg_advisory_unlock_all|dblink|pg_notify|"
                      r"pg_sleep|lo_\w+|set_config)\s*\(|^\s*(?:WITH|CALL|DO|COPY|LOCK|SET|"
                      r"SAVEPOINT|RELEASE|ROLLBACK\s+TO|PREPARE|EXECUTE|CREATE|ALTER|DROP|"
                      r"TRUNCATE|GRANT|REVOKE|VACUUM|ANALYZE|NOTIFY|LISTEN)\b", re.I)
_KIND = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|COMMIT|ROLLBACK|BEGIN|END)\b", re.I)
# compiled here, at import: a replica is a fork of a process that imported this module, so
# each pattern is compiled once, not once per replica
_CAST_TAIL = re.compile(r"\s*::.*\Z", re.S)
_CAST = re.compile(r"::\s*\w+")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_INTEGER = re.compile(r"-?\d+")
_STRING = re.compile(r"'(?:[^']|'')*'")
_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)


def of_statement(sql: str, parameters: Any = None) -> Access:
    """What `sql` (with its `parameters`, as the driver gets them) touches; EVERYTHING when
    that cannot be read from it."""
    text = _without_comments_and_strings(sql)
    kind = _KIND.match(text)
    if kind is None or _UNKNOWN.search(text):
        return EVERYTHING
    word = kind.group(1).upper()
    if word in ("COMMIT", "ROLLBACK", "END"):
        return ENDS
    if word == "BEGIN":
        return Access()
    named = [_table(m) for m in _TABLES.finditer(text)]
    tables = set(named)
    keys = frozenset(_key(m.group(1), parameters) for m in _ADVISORY.finditer(text))
    if word == "SELECT":
        if _LOCKING.search(text):
            return Access(writes=frozenset(tables), keys=keys)
        return Access(reads=frozenset(tables), keys=keys)
    target = _TARGET.match(text)
    if target is None:
        return EVERYTHING
    written = _table(target)
    reads = frozenset(tables - ({written} if named.count(written) == 1 else set()))
    if word == "INSERT":
        return Access(reads=reads, inserts=frozenset({written}), rows=_rows(sql, parameters),
                      keys=keys)
    return Access(reads=reads, writes=frozenset({written}), keys=keys)


_VALUES = re.compile(rf"^\s*INSERT\s+INTO\s+(?:ONLY\s+)?{_WORD}\s*\(([^()]*)\)\s*VALUES\s*", re.I)


def _rows(sql: str, parameters: Any) -> tuple[Row, ...] | None:
    """The rows of `INSERT INTO t (columns) VALUES (…), (…)`, each value read from its literal
    or its parameter (None where it is an expression); None for any other form."""
    m = _VALUES.match(sql)
    if m is None:
        return None
    columns = [c.strip().strip('"').lower() for c in m.group(3).split(",")]
    rows = []
    rest = sql[m.end():]
    while rest.startswith("("):
        items, rest = _group(rest)
        if items is None or len(items) != len(columns):
            return None
        rows.append(tuple(zip(columns, (_value(i, parameters, n) for n, i in enumerate(items)),
                              strict=True)))
        rest = rest.lstrip()
        if not rest.startswith(","):
            break
        rest = rest[1:].lstrip()
    return tuple(rows) or None


def _group(text: str) -> tuple[list[str] | None, str]:
    """A parenthesised list at the start of `text`: its items split at top-level commas, and
    the text after it (quotes and nested parentheses kept whole)."""
    depth, quoted, start, items = 0, False, 1, []
    for i, ch in enumerate(text):
        if ch == "'":
            quoted = not quoted
        elif quoted:
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                items.append(text[start:i].strip())
                return items, text[i + 1:]
        elif ch == "," and depth == 1:
            items.append(text[start:i].strip())
            start = i + 1
    return None, ""


def _value(item: str, parameters: Any, position: int) -> str | None:
    """One VALUES item as text: a literal, or a placeholder's parameter; None otherwise."""
    item = _CAST_TAIL.sub("", item).strip()
    if _NUMBER.fullmatch(item):
        return item
    if _STRING.fullmatch(item):
        return item[1:-1].replace("''", "'")
    m = _PLACEHOLDER.match(item)
    if m is None:
        return None
    value = _parameter(m, parameters, position)
    return None if value is None else str(value)


def _table(m: re.Match) -> str:
    """A table's name without its schema (the lab's stages live in one schema)."""
    return (m.group(2) or m.group(1)).lower()


def _key(arguments: str, parameters: Any) -> str:
    """An advisory lock's key as text: its literal, or the parameter a placeholder names;
    '*' (every key) when neither can be read."""
    values = []
    for argument in (_CAST.sub("", a).strip() for a in arguments.split(",")):
        if _INTEGER.fullmatch(argument):
            values.append(argument)
            continue
        m = _PLACEHOLDER.match(argument)
        value = None if m is None else _parameter(m, parameters, len(values))
        if value is None:
            return "*"
        values.append(str(value))
    return ",".join(values) or "*"


def _parameter(m: re.Match, parameters: Any, position: int) -> object:
    name = m.group(1) or m.group(3)
    if name is not None and isinstance(parameters, Mapping):
        return parameters.get(name)
    index = int(m.group(2)) - 1 if m.group(2) else position
    if isinstance(parameters, Sequence) and not isinstance(parameters, str) \
            and 0 <= index < len(parameters):
        return parameters[index]
    return None


def _without_comments_and_strings(sql: str) -> str:
    """The statement with its comments and quoted strings blanked (a table named in a string is
    no table)."""
    sql = _COMMENT.sub(" ", sql)
    return _STRING.sub("''", sql)
