"""The Spanish workshop guide names each concept one way (issue 41, item 12).

WORKSHOP.es.md once called the scheduler both "planificador" and "programador" (which reads as
"the programmer"), the track and the lane both "carril", and the fencing token, the lease, the
lock and the overlap by two names each. The glossary below holds, for each concept, the one
Spanish term the guide uses and the variants it must not use; the tests read the guide's prose
(code, link targets and the glossary's English column left out) and check it against that list,
check that the Spanish glossary has the English glossary's rows, and check that the guide speaks
to the reader one way (tú) with one label for what to look at ("Mira")."""

from __future__ import annotations

import re
from typing import NamedTuple

import pytest

from tests.helpers import ROOT

ENGLISH = ROOT / "WORKSHOP.md"
SPANISH = ROOT / "WORKSHOP.es.md"


class Term(NamedTuple):
    use: str  # the Spanish term (a stem is enough: "solap" covers solapar and solapamiento)
    banned: tuple[str, ...]  # regular expressions, each matched as a whole word
    row: str | None  # the English glossary row whose Spanish column gives `use`, if any


TERMS = {
    "scheduler": Term("planificador", (r"programador\w*", r"schedulers?"), None),
    "schedule (noun)": Term("programación", (r"schedules?",), None),
    "lock": Term("candado", (r"locks?", r"bloqueos?", r"cerrojos?"), None),
    "advisory lock": Term("candado consultivo", (r"bloqueos? consultivos?",), "advisory lock"),
    "lease": Term("lease", (r"arrendamientos?",), "lease"),
    "fencing token": Term("token de fencing", (r"fichas?", r"fencing tokens?"), "fencing token"),
    "overlap": Term("solap", (r"traslap\w*", r"overlap\w*"), "overlapping runs, overlapped"),
    "track (cron, alerts, detours)": Term(
        "serie", (r"tracks?", r"pistas?", r"carril(?:es)? (?:de )?(?:alertas|cron|desvíos|peers)"),
        "tick"),
    "lane (a row of a picture)": Term("carril", (r"lanes?",), None),
    "loop": Term("ciclo", (r"loops?", r"bucles?"), "tick"),
    "row": Term("fila", (r"renglón", r"renglones"), "claim"),
    "key": Term("llave", (r"claves?",), "claim"),
    "failover": Term("conmutación por falla", (r"failovers?",),
                     "failover, asynchronous standby, remote_apply"),
    "failure": Term("falla", (r"fallos?",), "serialization failure"),
}

PROPER_NAMES = ("EventBridge Scheduler",)  # a product's name is not a term to translate

# The guide says tú: these are usted or ustedes forms of the verbs it uses, or the pronouns.
USTED = (r"usted(?:es)?", r"ejecuten?", r"observen?", r"escriban?", r"abran?", r"miren?",
         r"predigan?", r"discutan?", r"lean", r"pongan", r"preferirían")

# Every bold label that opens a paragraph, in the tú form; what to look at is always "Mira".
LABELS = {"Cómo se midieron las duraciones", "Momento de la historia", "Predice", "Corre",
          "Mira", "Lee", "Discute", "Ejercicio, en parejas", "De tarea"}


def _word(pattern: str) -> re.Pattern[str]:
    """A pattern matched as a whole word, where a hyphen counts as part of a word (so `lock`
    does not match inside the folder name 01-advisory-lock), and a space as any line break."""
    pattern = pattern.replace(" ", r"\s+")
    return re.compile(rf"(?<![\w-])(?:{pattern})(?![\w-])", re.IGNORECASE)


def _section(text: str, heading: str) -> str:
    """The text under `## heading`, up to the next `## ` heading or the end."""
    start = text.index(f"\n## {heading}\n")
    following = text.find("\n## ", start + 1)
    return text[start:] if following == -1 else text[start:following]


def _rows(text: str, heading: str) -> list[list[str]]:
    """The glossary's table rows (header and rule left out), each a list of its cells."""
    lines = [line for line in _section(text, heading).splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def _prose(text: str) -> str:
    """The words a reader reads as Spanish: no code blocks, no `code`, no link targets, no
    product names, and in the glossary neither the English column nor an *(English original)*."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    for name in PROPER_NAMES:
        text = text.replace(name, "")
    if "\n## Glosario\n" not in text:
        return text
    glossary = _section(text, "Glosario")
    spanish_only = [("| " + line.strip("|").split("|", 1)[1]) if line.startswith("|") else line
                    for line in glossary.splitlines()]
    spanish_only = [re.sub(r"\(\*[^*]+\*\)", "", line) for line in spanish_only]
    return text.replace(glossary, "\n".join(spanish_only))


def _running_text(text: str) -> str:
    """The guide without its glossary."""
    return text.replace(_section(text, "Glosario"), "")


@pytest.mark.parametrize("concept", TERMS)
def test_the_spanish_guide_uses_none_of_a_concepts_other_names(concept: str) -> None:
    """No variant the glossary rules out appears in the Spanish guide's prose."""
    prose = _prose(SPANISH.read_text())
    found = [m.group(0) for pattern in TERMS[concept].banned
             for m in _word(pattern).finditer(prose)]
    assert found == [], f"{concept}: use {TERMS[concept].use!r}, not {found}"


@pytest.mark.parametrize("concept", TERMS)
def test_the_spanish_guide_uses_the_chosen_term_in_its_glossary_and_its_text(
        concept: str) -> None:
    """The chosen term is in the running text and, for a concept with a glossary row, in that
    row's Spanish column."""
    term = TERMS[concept]
    text = SPANISH.read_text()
    starts = re.compile(r"(?<![\w-])" + r"\s+".join(map(re.escape, term.use.split())),
                        re.IGNORECASE)
    assert starts.search(_prose(_running_text(text))), f"{concept}: {term.use!r} not in the text"
    if term.row is not None:
        spanish_of = {row[0]: " ".join(row[1:]) for row in _rows(text, "Glosario")}
        assert starts.search(spanish_of[term.row]), f"{concept}: not in the row {term.row!r}"


def test_the_spanish_glossary_has_the_english_glossarys_rows_in_order() -> None:
    """Same English terms in the first column, in the same order, three columns each, and the
    glossary sits where the English one does: last in the guide."""
    english, spanish = ENGLISH.read_text(), SPANISH.read_text()
    assert [r[0] for r in _rows(spanish, "Glosario")] == [r[0] for r in _rows(english, "Glossary")]
    assert {len(r) for r in _rows(spanish, "Glosario")} == {3}
    for text, heading in ((english, "Glossary"), (spanish, "Glosario")):
        headings = re.findall(r"^## (.+)$", text, re.M)
        assert headings[-1] == heading


def test_the_advisory_lock_entry_says_it_answers_at_once_and_lets_go_at_the_end() -> None:
    """Like the English entry: the try-lock answers at once, never waits, and the transaction's
    lock is let go at COMMIT or ROLLBACK."""
    entry = {row[0]: row[2] for row in _rows(SPANISH.read_text(), "Glosario")}["advisory lock"]
    assert "`pg_try_advisory_xact_lock`" in entry
    assert "de inmediato" in entry and "nunca espera" in entry
    assert "COMMIT" in entry and "ROLLBACK" in entry


def test_the_spanish_guide_speaks_to_the_reader_as_tu() -> None:
    """No usted or ustedes forms ("ejecute", "observe", "lean", "pongan", …)."""
    prose = _prose(SPANISH.read_text())
    found = [m.group(0) for pattern in USTED for m in _word(pattern).finditer(prose)]
    assert found == []


def test_the_spanish_guide_labels_what_to_look_at_with_mira() -> None:
    """Each paragraph label is one of the guide's few, and there is a "Mira." wherever the
    English guide has a "Look at."."""
    label = re.compile(r"^\*\*([^*]+?)\.\*\*", re.M)
    spanish = label.findall(SPANISH.read_text())
    assert set(spanish) <= LABELS
    assert spanish.count("Mira") == label.findall(ENGLISH.read_text()).count("Look at") > 5
