"""The workshop's plan adds up, and its guides explain the words they use (issue 41, items 11
and 13).

Item 11: the wrap-up, stage 02 and stage 04 did not fit their minutes, so the agenda was planned
again. These tests read the agenda table of each guide (`| 0:38 | 23 min | block | … |`) and check
that each block starts where the previous one ends, that the blocks add up to the session's
length, and that this length is the one README.md, WORKSHOP.md and WORKSHOP.es.md state in words
("two hours and thirty minutes", "dos horas y treinta minutos").

Item 13: a mid-level engineer left without the meaning of preemption, partial, missed,
"extra, accepted", shrinking and the virtual clock; each has a row in the glossary now."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import ROOT, readme_matrix

ENGLISH = ROOT / "WORKSHOP.md"
SPANISH = ROOT / "WORKSHOP.es.md"
GUIDES = [ENGLISH, SPANISH]

ROW = re.compile(r"^\| (\d+):(\d\d) \| (\d+) min \| ([^|]+?) \|", re.M)

WORDS_EN = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
            "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
            "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
            "fifty": 50}
WORDS_ES = {"cero": 0, "una": 1, "uno": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5,
            "seis": 6, "siete": 7, "ocho": 8, "nueve": 9, "diez": 10, "once": 11, "doce": 12,
            "trece": 13, "catorce": 14, "quince": 15, "dieciséis": 16, "diecisiete": 17,
            "dieciocho": 18, "diecinueve": 19, "veinte": 20, "treinta": 30, "cuarenta": 40,
            "cincuenta": 50}

# A stated length: "two hours and thirty minutes", "dos horas y treinta minutos" (the minutes
# may be two words: "forty-five", "treinta y cinco").
STATED_EN = re.compile(r"\b(\w+) hours? and ([\w-]+) minutes\b")
STATED_ES = re.compile(r"\b(\w+) horas? y (\w+(?: y \w+)?) minutos\b")

GLOSSARY_TERMS = ("preemption", "partial", "missed", "accepted", "shrink", "virtual")


def _section(text: str, heading: str) -> str:
    """The text under `## heading`, up to the next `## ` heading or the end."""
    start = text.index(f"\n## {heading}\n")
    following = text.find("\n## ", start + 1)
    return text[start:] if following == -1 else text[start:following]


def _agenda(path: Path) -> list[tuple[int, int, str]]:
    """The agenda's blocks: (start in minutes, length in minutes, block)."""
    rows = ROW.findall(_section(path.read_text(), "Agenda"))
    return [(int(h) * 60 + int(m), int(length), block.strip()) for h, m, length, block in rows]


def _number(words: str, table: dict[str, int]) -> int:
    """A number written in words: "thirty", "forty-five", "treinta y cinco"."""
    parts = re.split(r"-| y ", words.lower())
    return sum(table[part] for part in parts)


def _stated_lengths(path: Path) -> list[int]:
    """Every session length the file states in words, in minutes."""
    text = " ".join(path.read_text().split())
    pattern, table = (STATED_ES, WORDS_ES) if path == SPANISH else (STATED_EN, WORDS_EN)
    return [_number(hours, table) * 60 + _number(minutes, table)
            for hours, minutes in pattern.findall(text)]


def _glossary_terms(path: Path, heading: str) -> list[str]:
    """The first column of the glossary's rows (header and rule left out)."""
    lines = [line for line in _section(path.read_text(), heading).splitlines()
             if line.startswith("|")]
    return [line.strip("|").split("|")[0].strip() for line in lines[2:]]


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.name)
def test_each_block_starts_where_the_previous_one_ends(guide: Path) -> None:
    """Start = the previous block's start + its minutes, from 0:00."""
    blocks = _agenda(guide)
    assert len(blocks) >= 10
    assert blocks[0][0] == 0
    for (start, length, block), (following, _, name) in zip(blocks, blocks[1:], strict=False):
        assert following == start + length, f"{name} starts at {following}, {block} ends at " \
                                            f"{start + length}"


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.name)
def test_the_blocks_add_up_to_the_length_the_docs_state(guide: Path) -> None:
    """The blocks' minutes add up to the length the guide states, which README.md and the other
    guide state too."""
    total = sum(length for _, length, _ in _agenda(guide))
    stated = {path.name: _stated_lengths(path) for path in (ROOT / "README.md", *GUIDES)}
    assert all(stated.values()), stated
    assert {n for lengths in stated.values() for n in lengths} == {total}, (total, stated)


def test_both_guides_plan_the_same_blocks() -> None:
    """Same starts and minutes in English and Spanish (the block names are translated)."""
    english = [(start, length) for start, length, _ in _agenda(ENGLISH)]
    spanish = [(start, length) for start, length, _ in _agenda(SPANISH)]
    assert english == spanish


@pytest.mark.parametrize("term", GLOSSARY_TERMS)
def test_each_term_of_item_13_has_a_glossary_row(term: str) -> None:
    """preemption, partial, missed, "extra, accepted", shrinking, the virtual clock: a row of
    the English glossary, and so of the Spanish one, which lists the same English terms."""
    english = _glossary_terms(ENGLISH, "Glossary")
    assert any(term in row.lower() for row in english), f"no glossary row for {term!r}"
    assert _glossary_terms(SPANISH, "Glosario") == english


def test_the_readme_counts_the_exercises_the_repository_holds():
    """README.md says how many exercises check themselves: as many as exercises/ holds."""
    said = re.search(r"holds (\w+) exercises that", " ".join(
        (ROOT / "README.md").read_text().split()))
    assert said, "README.md no longer says how many exercises there are"
    held = [p for p in (ROOT / "exercises").glob("[0-9][0-9]-*") if (p / "check.toml").exists()]
    assert WORDS_EN[said.group(1)] == len(held)


def test_the_card_counts_the_readme_matrix_cells_it_names():
    """docs/card.md's fix ladder quotes cron cells; each is the README matrix's (which the slow
    README test recomputes from runs)."""
    card, cells = (ROOT / "docs" / "card.md").read_text(), readme_matrix("cron")
    quoted = {("00-the-bug", "simultaneous"): "each replica pays: 3 with three replicas",
              ("01-advisory-lock", "staggered"): "3 under `staggered`",
              ("02-thread-sentinel", "silent-failure"): "3 under `silent-failure`"}
    for (stage, scenario), words in quoted.items():
        assert words in card
        assert cells[(stage, scenario)].split()[0] == "3", (stage, scenario)
