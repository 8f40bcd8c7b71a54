"""`racelab report --html DIR`: one offline page with both matrices, looked at in a real browser."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from tests.helpers import chromium, racelab


class Seen(HTMLParser):
    """What the rendered page shows: its matrices' cells, which cell stands open, and the runs
    shown under the matrices (a section not hidden), with what each shows."""

    def __init__(self):
        super().__init__()
        self.tracks: list[str] = []
        self.cells: dict[str, list[str]] = {}
        self.open: list[str] = []  # stage × scenario of each cell marked open
        self.shown: list[str] = []  # the id of each run section not hidden
        self.lanes: list[str] = []  # lanes drawn in the shown runs
        self.current: list[str] = []  # the highlighted op's id in the shown runs
        self.where = ""  # "step N of M" in the shown run
        self.legend: list[str] = []  # the legend lines under the matrices
        self.run_inside_a_table = False  # a run section met while a table is open
        self._tables = 0
        self._shown = False
        self._in = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "table" and "matrix" in classes:
            self._tables += 1
            self.tracks.append(a["data-track"])
            self.cells[a["data-track"]] = []
        elif tag == "td" and "cell" in classes:
            self.cells[self.tracks[-1]].append(a["data-scenario"])
            if "open" in classes:
                self.open.append(f"{a['data-stage']} × {a['data-scenario']}")
        elif tag == "section" and "run" in classes:
            self.run_inside_a_table |= self._tables > 0
            self._shown = "hidden" not in a
            if self._shown:
                self.shown.append(a["id"])
        elif self._shown and tag == "g" and a.get("class") == "lane":
            self.lanes.append(a["data-lane"])
        elif self._shown and tag == "li" and "current" in classes:
            self.current.append(a["id"])
        elif self._shown and "where" in classes:
            self._in = "where"
        elif tag == "p" and a.get("class") == "legend":
            self._in = "legend"

    def handle_data(self, data):
        if self._in == "legend":
            self.legend.append(data)
        elif self._in == "where":
            self.where += data

    def handle_endtag(self, tag):
        if tag == "table" and self._tables:
            self._tables -= 1
        elif tag == "section":
            self._shown = False
        if tag in ("p", "span"):
            self._in = ""


@pytest.mark.browser
def test_report_page_shows_both_matrices_and_a_cell_opens_its_run(pg, tmp_path):
    """Rendered by headless Chromium: the cron and alerts matrices with every cell of the chosen
    stages; following a cell's link marks that cell and shows its run under the matrix, never
    inside it: the picture and the step view on its first op, or on op N for `/step=N`. Under
    each matrix, the legend of its marked cells (03's claim-cleanup, times the lab chose; 01's
    redis-failover, modelled, and overlap, both). A week
    (over page.MAX_OPS ops) shows its picture and the command for a page of its own."""
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
                                  "clock-skew", "week", "pause", "claim-cleanup",
                                  "dst-fall-back", "dst-spring-forward", "replica-lag",
                                  "standby-failover"]
    assert seen.cells["alerts"] == ["two-replicas", "incident", "deploy", "other-creator", "p0",
                                    "redis-down", "redis-slow", "prune-flood", "reconcile",
                                    "redis-failover", "overlap"]
    assert seen.open == ["03-claim-row × staggered"]
    assert seen.shown == ["run-03-staggered"] and not seen.run_inside_a_table
    assert seen.lanes == ["A", "B", "C"]
    assert seen.current == ["run-03-staggered-op-0"]
    last = int(seen.where.split()[-1])
    assert seen.where == f"step 0 of {last}" and last > 20
    at_step = Seen()
    at_step.feed(chromium(f"{page.as_uri()}#run-alerts-01-p0/step=7", "--dump-dom"))
    assert at_step.open == ["alerts/01-redis-claim × p0"]
    assert at_step.shown == ["run-alerts-01-p0"]
    assert at_step.current == ["run-alerts-01-p0-op-7"]
    week = page.read_text().split('<section class="run" id="run-03-week" hidden>')[1]
    week = week.split("</section>")[0]
    assert 'class="replay"' not in week and "<svg" in week
    assert "racelab run 03 --scenario week --html FILE</code> writes a page" in week
    assert seen.legend == ["§ rests on times the lab chose (the scenario file's); the post gives "
                           "none",  # under the cron matrix: 03's claim-cleanup, the DST nights
                           "‡ rests on a parameter the lab models or sets (named in "
                           "docs/FIDELITY.md), not on a value observed",
                           "§ rests on times the lab chose (the scenario file's); the post gives "
                           "none"]  # under the alerts matrix: 01's redis-failover, overlap
