"""`racelab report --html DIR` after `make demo`'s light install, which leaves the peer
libraries out: it finds that out before any run, leaves the peers track out and says so (on the
page and in one line on stderr), or, when a peers stage is asked for, stops at once with one
line and exit 2, the previous page untouched. The libraries are hidden from the child Python the
way an uninstalled module looks (sys.modules[name] = None: find_spec says None, import fails)."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness import writes
from harness.engine.model import registry
from tests.helpers import chromium, racelab

PEERS = registry.track("peers")
LEFT_OUT = (f"racelab: report: the peers track is left out: the peers track's stages need "
            f"{', '.join(PEERS.requires)}, not installed here: {PEERS.install_hint}\n")


def light_install(tmp: Path) -> dict[str, str]:
    """The environment of a child racelab that finds none of the peer libraries."""
    hide = tmp / "light-install"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        f"import sys\nfor name in {PEERS.requires!r}:\n    sys.modules[name] = None\n")
    return {"PYTHONPATH": str(hide)}


class Page(HTMLParser):
    """The page's notes, and each matrix with the box it sits in."""

    def __init__(self):
        super().__init__()
        self.notes: list[str] = []
        self.tracks: list[tuple[str, str]] = []  # (track, class of the element around it)
        self.layout = ""  # what the probe script measured (the browser test)
        self._open: list[str] = []
        self._note = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("class") == "matrix":
            self.tracks.append((a["data-track"], self._open[-1] if self._open else ""))
        if tag == "body" and a.get("data-layout"):
            self.layout = a["data-layout"]
        self._note = tag == "p" and a.get("class") == "note"
        if tag == "div":
            self._open.append(a.get("class") or "")

    def handle_endtag(self, tag):
        if tag == "div" and self._open:
            self._open.pop()
        self._note = False

    def handle_data(self, data):
        if self._note:
            self.notes.append(data)


def seen(text: str) -> Page:
    page = Page()
    page.feed(text)
    return page


@pytest.fixture(scope="session")  # built once per worker: its tests share one group
def light_page(pg, tmp_path_factory) -> tuple[Path, object]:
    """`racelab report --html DIR` without --stage, after the light install (every cell of the
    cron and alerts tracks: a minute or two)."""
    tmp = tmp_path_factory.mktemp("light-report")
    done = racelab("report", "--html", str(tmp / "site"), env=light_install(tmp), timeout=900)
    return tmp / "site" / "index.html", done


@pytest.mark.slow
@pytest.mark.xdist_group("light-report")  # one worker builds the page they all read
def test_after_the_light_install_report_leaves_the_peers_track_out_and_says_so(light_page):
    """Exit 0, one line on stderr naming the libraries and `make setup`, the same words at the
    top of the page, and every other track's matrix (cron, alerts, detours)."""
    index, done = light_page
    assert (done.returncode, done.stderr) == (0, LEFT_OUT), done.stderr
    assert done.stdout == f"wrote {index}\n"
    page = seen(index.read_text())
    assert page.notes == [LEFT_OUT.removeprefix("racelab: report: ").rstrip("\n")]
    assert [track for track, _ in page.tracks] == ["cron", "alerts", "detours"]


@pytest.mark.slow
@pytest.mark.xdist_group("light-report")  # one worker builds the page they all read
def test_every_matrix_sits_in_a_box_of_its_own_that_scrolls(light_page):
    """A table wider than the window scrolls inside its box instead of losing its columns."""
    index, _ = light_page
    assert seen(index.read_text()).tracks == [("cron", "scroll"), ("alerts", "scroll"),
                                             ("detours", "scroll")]


PROBE = """<script>
const layout = [...document.querySelectorAll('table.matrix')].map(table => {
  const box = table.parentElement, first = table.querySelector('tr > th:first-child');
  const scrolls = box.scrollWidth > box.clientWidth;
  box.scrollLeft = box.scrollWidth;
  return {track: table.dataset.track, right: Math.round(box.getBoundingClientRect().right),
          width: innerWidth, fits: scrolls || table.getBoundingClientRect().right <= innerWidth,
          first_stays: Math.round(first.getBoundingClientRect().left -
                                  box.getBoundingClientRect().left) <= 1};
});
document.body.setAttribute('data-layout', JSON.stringify(layout));
</script></body>"""


@pytest.mark.slow
@pytest.mark.xdist_group("light-report")  # one worker builds the page they all read
@pytest.mark.browser
def test_at_1280_px_every_matrix_fits_or_scrolls_with_its_first_column_fixed(light_page):
    """Headless Chromium, 1280 px wide: each matrix's box ends inside the window; the table
    fits or scrolls inside it, and scrolled to its end the stage column is still at the left."""
    index, _ = light_page
    probe = index.with_name("probe.html")
    probe.write_text(index.read_text().replace("</body>", PROBE))
    page = seen(chromium(probe.as_uri(), "--window-size=1280,900", "--dump-dom"))
    layout = json.loads(page.layout)
    assert [m["track"] for m in layout] == ["cron", "alerts", "detours"]
    for m in layout:
        assert m["right"] <= m["width"] <= 1280 and m["fits"] and m["first_stays"], m


def test_a_peers_stage_without_the_peer_libraries_is_one_line_exit_2_the_old_page_kept(
        pg, tmp_path):
    """Checked before any run: nothing runs, the previous index.html stays byte for byte, and
    nothing else is left in the folder."""
    site = tmp_path / "site"
    site.mkdir()
    writes.Target(site / "index.html", "--html").write("<p>the previous report</p>")
    before = (site / "index.html").read_bytes()
    done = racelab("report", "--html", str(site), "--stage", "03", "--stage", "peers-01",
                   env=light_install(tmp_path))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"racelab: report: the peers track's stages need "
                           f"{', '.join(PEERS.requires)}, not installed here: "
                           f"{PEERS.install_hint}\n")
    assert (site / "index.html").read_bytes() == before
    assert sorted(p.name for p in site.iterdir()) == ["index.html"]
