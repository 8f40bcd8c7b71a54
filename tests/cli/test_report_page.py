"""`racelab report --html DIR`: one offline page with both matrices, looked at in a real browser."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from tests.helpers import chromium, racelab


class Seen(HTMLParser):
    """What the rendered page shows: its matrices' cells, and which cells stand open."""

    def __init__(self):
        super().__init__()
        self.tracks: list[str] = []
        self.cells: dict[str, list[str]] = {}
        self.open: list[str] = []  # scenario of each open cell
        self.lanes: list[str] = []  # lanes drawn inside open cells
        self.legend: list[str] = []  # the legend lines under the matrices
        self._cell = ""
        self._open = False
        self._legend = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("class") == "matrix":
            self.tracks.append(a["data-track"])
            self.cells[a["data-track"]] = []
        elif tag == "td" and a.get("class") == "cell":
            self._cell = f"{a['data-stage']} × {a['data-scenario']}"
            self.cells[self.tracks[-1]].append(a["data-scenario"])
            self._open = False
        elif tag == "details" and "open" in a:
            self.open.append(self._cell)
            self._open = True
        elif tag == "g" and a.get("class") == "lane" and self._open:
            self.lanes.append(a["data-lane"])
        elif tag == "p" and a.get("class") == "legend":
            self._legend = True

    def handle_data(self, data):
        if self._legend:
            self.legend.append(data)

    def handle_endtag(self, tag):
        if tag == "details":
            self._open = False
        elif tag == "p":
            self._legend = False


@pytest.mark.browser
def test_report_page_shows_both_matrices_and_a_cell_opens_its_run(pg, tmp_path):
    """Rendered by headless Chromium: the cron and alerts matrices with every cell of the chosen
    stages, and following a cell's link opens that cell on the picture of its run. Under the
    alerts matrix, the legend of its one marked cell (01's redis-failover, a modelled failover)."""
    done = racelab("report", "--html", str(tmp_path), "--stage", "03", "--stage", "alerts-01",
                   timeout=600)
    assert done.returncode == 0, done.stderr
    page = tmp_path / "index.html"
    assert done.stdout.strip() == f"wrote {page}"
    seen = Seen()
    seen.feed(chromium(f"{page.as_uri()}#run-03-staggered", "--dump-dom"))
    assert seen.tracks == ["cron", "alerts"]
    assert seen.cells["cron"] == ["simultaneous", "staggered", "silent-failure",
                                  "crash-after-claim", "deploy-restart", "kill-mid-tick",
                                  "clock-skew", "week", "pause"]
    assert seen.cells["alerts"] == ["two-replicas", "incident", "deploy", "other-creator", "p0",
                                    "redis-down", "redis-slow", "prune-flood", "reconcile",
                                    "redis-failover"]
    assert seen.open == ["03-claim-row × staggered"]
    assert seen.lanes == ["A", "B", "C"]
    assert seen.legend == ["‡ rests on a parameter the lab models or sets (named in "
                           "docs/FIDELITY.md), not on a value observed"]
