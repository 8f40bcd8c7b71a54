"""`racelab run … --html FILE`: one offline page that steps through the run op by op, checked
as written and as headless Chromium shows it."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.helpers import chromium, one_line_exit_2, racelab_here, racelab_json


class Shown(HTMLParser):
    """What the page shows: the highlighted op's line, the state rows, the step counter, the
    picture, and the embedded data."""

    def __init__(self):
        super().__init__()
        self.current: list[str] = []  # the text of each highlighted op (one, if all is well)
        self.aria: list[str] = []  # ids of ops marked aria-current
        self.state: dict[str, str] = {}
        self.after = self.where = self.data = ""
        self.svg = 0
        self._in, self._key = "", ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "li" and "current" in (a.get("class") or "").split():
            self._in = "current"
            self.current.append("")
        elif tag == "li":
            self._in = ""
        if tag == "li" and a.get("aria-current") == "step":
            self.aria.append(a["id"])
        if tag == "svg":
            self.svg += 1
        if a.get("id") in ("state-after", "where", "run-data"):
            self._in = a["id"]
        elif tag in ("th", "td") and self._in in ("state-value", "th", "td"):
            self._in = tag
        elif a.get("id") == "state-value":
            self._in = "state-value"

    def handle_endtag(self, tag):
        if tag in ("th", "td") and self._in == tag:
            self._in = "state-value"
        elif tag in ("li", "p", "span", "script") or (tag == "table"
                                                       and self._in == "state-value"):
            self._in = ""

    def handle_data(self, data):
        if self._in == "current":
            self.current[-1] += data
        elif self._in == "state-after":
            self.after += data
        elif self._in == "where":
            self.where += data
        elif self._in == "run-data":
            self.data += data
        elif self._in == "th":
            self._key = data
        elif self._in == "td":
            self.state[self._key] = self.state.get(self._key, "") + data


def embedded(page: Path) -> dict:
    shown = Shown()
    shown.feed(page.read_text())
    return json.loads(shown.data)


def test_the_page_carries_the_very_history_run_json_printed(tmp_path):
    """One run with --json and --html: the page's data is the printed history[] and states[],
    op for op; 01 × staggered pays 30, 60, 90 coins after A's, B's and C's commits."""
    page = tmp_path / "run.html"
    out = racelab_here("run", "01", "--scenario", "staggered", "--json", "--html", str(page))
    data = racelab_json(out)
    assert embedded(page) == {"history": data["history"], "states": data["states"]}
    assert [s["value"]["coins_paid"] for s in data["states"]] == [30, 60, 90]


def test_html_refuses_a_file_racelab_did_not_write_before_running(tmp_path):
    """A page of one's own at the path: one line, exit 2, the file untouched, no run."""
    page = tmp_path / "mine.html"
    page.write_text("<p>my notes</p>\n")
    out = racelab_here("run", "01", "--scenario", "staggered", "--html", str(page))
    one_line_exit_2(out, "--html", str(page), "--force")
    assert page.read_text() == "<p>my notes</p>\n"


def commit_of(history: list[dict], process: str) -> int:
    [op] = [op for op in history if op["process"] == process and op["f"] == "commit"
            and op["type"] == "ok"]
    return op["index"]


@pytest.mark.browser
def test_step_n_in_the_hash_opens_on_that_op_and_the_state_after_it(tmp_path):
    """Rendered by headless Chromium: `FILE#step=N` highlights op N alone and shows the coins
    paid after the latest commit at or before it: 30 after A's COMMIT and still 30 at B's last
    step before its own, 60 after B's COMMIT; the picture is on the page."""
    page = tmp_path / "run.html"
    done = racelab_here("run", "01", "--scenario", "staggered", "--html", str(page))
    assert done.returncode == 0, done.stderr
    history = embedded(page)["history"]
    last = len(history) - 1
    a, b = commit_of(history, "A"), commit_of(history, "B")
    for step, process, coins in ((a, "A", "30"), (b - 1, "B", "30"), (b, "B", "60")):
        shown = Shown()
        shown.feed(chromium(f"{page.as_uri()}#step={step}", "--dump-dom"))
        assert shown.where == f"step {step} of {last}"
        assert shown.aria == [f"op-{step}"]
        [line] = shown.current
        assert line.split()[0] == str(step)
        assert line.split()[3] == process
        assert shown.state["coins_paid"] == coins
        assert "claim_rows" not in shown.state  # 01 has no claim table: null in every state
        assert shown.svg >= 1
    assert "commit ok" in shown.after and str(b) in shown.after


DRIVER = """<script>
const seen = [];
const key = (k) => document.dispatchEvent(new KeyboardEvent("keydown", {key: k}));
const slide = (v) => { const s = document.getElementById("slider"); s.value = v;
                       s.dispatchEvent(new Event("input")); };
for (const act of [() => document.getElementById("next").click(), () => key("ArrowRight"),
                   () => key("ArrowLeft"), () => document.getElementById("prev").click(),
                   () => slide("5"), () => key("End"), () => key("Home")]) {
  act();
  seen.push(location.hash + " " + document.querySelector("#ops li.current").id);
}
const out = document.createElement("pre");
out.id = "driven";
out.textContent = seen.join("\\n");
document.body.append(out);
</script>"""


class Driven(HTMLParser):
    def __init__(self):
        super().__init__()
        self.text, self._in = "", False

    def handle_starttag(self, tag, attrs):
        self._in = dict(attrs).get("id") == "driven"

    def handle_endtag(self, tag):
        self._in = False

    def handle_data(self, data):
        if self._in:
            self.text += data


@pytest.mark.browser
def test_buttons_arrows_and_slider_move_one_op_and_the_hash_follows(tmp_path):
    """From #step=10 in headless Chromium (a copy of the page with a script that presses the
    controls): next 11, → 12, ← 11, previous 10, slider 5, End the last op, Home 0; after each
    move the hash names the highlighted op."""
    page = tmp_path / "run.html"
    done = racelab_here("run", "01", "--scenario", "staggered", "--html", str(page))
    assert done.returncode == 0, done.stderr
    last = len(embedded(page)["history"]) - 1
    driven = tmp_path / "driven.html"
    driven.write_text(page.read_text().replace("</body>", DRIVER + "</body>"))
    seen = Driven()
    seen.feed(chromium(f"{driven.as_uri()}#step=10", "--dump-dom"))
    assert seen.text.splitlines() == [f"#step={n} op-{n}" for n in (11, 12, 11, 10, 5, last, 0)]


def test_svg_and_html_naming_one_file_are_refused_before_running(tmp_path):
    """`--svg F --html F` would let the page replace the picture: one line, exit 2, no file."""
    same = tmp_path / "run.html"
    out = racelab_here("run", "01", "--scenario", "staggered", "--svg", str(same), "--html",
                       str(same))
    one_line_exit_2(out, "--svg", "--html", str(same))
    assert list(tmp_path.iterdir()) == []


GEOMETRY = """<script>
addEventListener("load", () => setTimeout(() => {
  const mark = document.querySelector(".picture g.mark.current");
  const rect = (el) => { const r = el.getBoundingClientRect(); return [r.top, r.bottom]; };
  const out = document.createElement("pre");
  out.id = "driven";
  out.textContent = JSON.stringify({
    height: innerHeight, ops: mark ? mark.dataset.ops.split(",").map(Number) : [],
    marks: document.querySelectorAll(".picture g.mark.current").length,
    mark: mark ? rect(mark) : null, state: rect(document.getElementById("state")),
    current: rect(document.querySelector("#ops li.current")), scrolled: scrollY});
  document.body.append(out);
}, 100));
</script>"""


@pytest.mark.browser
def test_at_1280_by_720_the_picture_marks_the_current_op_beside_the_state(tmp_path):
    """Issue 41, item 10: at a projector's 1280×720, stepping shows in the picture: the step
    holding the current op (B's payout, op 30 of 01 × staggered) is the one marked, scrolled
    into the picture's box, and the op's line and the whole state panel are on the same
    screen, the page not scrolled."""
    page = tmp_path / "run.html"
    done = racelab_here("run", "01", "--scenario", "staggered", "--html", str(page))
    assert done.returncode == 0, done.stderr
    history = embedded(page)["history"]
    step = next(op["index"] for op in history if op["process"] == "B" and op["f"] == "write")
    measured = tmp_path / "measured.html"
    measured.write_text(page.read_text().replace("</body>", GEOMETRY + "</body>"))
    seen = Driven()
    seen.feed(chromium(f"{measured.as_uri()}#step={step}", "--window-size=1280,720",
                       "--virtual-time-budget=3000", "--dump-dom"))
    got = json.loads(seen.text)
    assert got["marks"] == 1 and step in got["ops"]
    assert got["scrolled"] == 0
    for part in ("mark", "state", "current"):
        top, bottom = got[part]
        assert top >= 0 and bottom <= got["height"], (part, got)


@pytest.mark.browser
def test_the_state_panel_shows_claim_rows_where_the_stage_has_a_claim_table(tmp_path):
    """03 has worker_runs: its state panel counts the claim rows (01's, null throughout, is
    left out: issue 41, item 10)."""
    page = tmp_path / "run.html"
    done = racelab_here("run", "03", "--scenario", "staggered", "--html", str(page))
    assert done.returncode == 0, done.stderr
    last = len(embedded(page)["history"]) - 1
    shown = Shown()
    shown.feed(chromium(f"{page.as_uri()}#step={last}", "--dump-dom"))
    assert shown.state["claim_rows"] == "1" and shown.state["coins_paid"] == "30"
