"""The step-through page's builder (harness/engine/views/run_page.py): the page carries the run's
history as it is, and lists every op on one readable line."""

from __future__ import annotations

import json
from datetime import datetime
from html.parser import HTMLParser

from harness.engine.model.history import F, History, Type
from harness.engine.model.scenario import TZ
from harness.engine.views import run_page

T = datetime(2026, 5, 29, 18, 0, tzinfo=TZ)


class Page(HTMLParser):
    """The embedded JSON and the ops list's lines, as the builder wrote them."""

    def __init__(self):
        super().__init__()
        self.data, self.lines, self.scripts = "", [], 0
        self._in = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
            self._in = "data" if a.get("type") == "application/json" else ""
        elif tag == "li":
            self._in = "li"
            self.lines.append("")

    def handle_endtag(self, tag):
        self._in = ""

    def handle_data(self, data):
        if self._in == "data":
            self.data += data
        elif self._in == "li":
            self.lines[-1] += data


def two_ticks() -> History:
    """A and B each lock, write and commit; B's value holds a `</script>` that must not end the
    page's data early."""
    h = History()
    for who in ("A", "B"):
        h.add(who, Type.INVOKE, F.TICK, T)
        h.add(who, Type.OK, F.LOCK, T, {"result": True})
        h.add(who, Type.OK, F.WRITE, T, {"table": "coin_credits", "rows": 3, "updated": 0})
        h.add(who, Type.OK, F.COMMIT, T)
        h.state(T, {"coins_paid": 30 if who == "A" else 60})
    h.add("B", Type.INFO, F.LOG, T, {"message": "</script><b>" + "x" * 80})
    return h


def parsed(history: list[dict], states: list[dict]) -> Page:
    p = Page()
    p.feed(run_page.html("racelab run 01 · staggered", "<svg></svg>", history, states))
    return p


def test_the_embedded_json_is_the_runs_history_and_states_unchanged():
    """json.loads of the page's data gives back history[] and states[] exactly, `</script>`
    included (escaped, so the data script is not cut short)."""
    history, states = two_ticks().to_json()
    page = parsed(history, states)
    assert json.loads(page.data) == {"history": history, "states": states}
    assert page.scripts == 2
    assert [s["value"]["coins_paid"] for s in states] == [30, 60]


def test_the_ops_list_has_one_readable_line_per_op():
    """Nine ops, nine lines, in index order: index, time, process, type, f, a short value."""
    history, states = two_ticks().to_json()
    lines = parsed(history, states).lines
    assert len(lines) == len(history) == 9
    assert lines[1] == "   1  Fri 18:00:00  A  ok     lock      result=true"
    assert lines[2] == ("   2  Fri 18:00:00  A  ok     write     "
                        'table="coin_credits" rows=3 updated=0')
    assert lines[7] == "   7  Fri 18:00:00  B  ok     commit"
    assert lines[8] == "   8  Fri 18:00:00  B  info   log       message=\"</script><b>" \
                       + "x" * 38 + "…"
    assert all("\n" not in line for line in lines)


def test_a_run_without_history_gives_an_empty_list_and_a_slider_of_one_position():
    """No ops: the list is empty and the slider has one position (0)."""
    text = run_page.html("t", "<svg></svg>", [], [])
    page = Page()
    page.feed(text)
    assert page.lines == []
    assert 'min="0" max="0"' in text
