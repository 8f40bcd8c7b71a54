"""One standalone page for a room without internet: every track's matrix, each cell opening the
picture of its run (inline SVG, no script, no link out)."""

from __future__ import annotations

from html import escape
from pathlib import Path

from rich.text import Text

from harness.engine import pictures, registry, report
from harness.engine.result import RunResult
from harness.engine.scenario import canonical
from harness.writes import Target

_CLASSES = {report.BAD: "bad", report.GOOD: "good", report.WARN: "warn", report.DIM: "dim"}

CSS = """
body { font-family: DejaVu Sans, sans-serif; margin: 2em; color: #111827; }
table { border-collapse: separate; border-spacing: 0; border: solid #d1d5db;
        border-width: 1px 0 0 1px; }  /* separate: a sticky cell keeps its borders */
/* a table wider than the window scrolls inside its own box, its first column staying put */
.scroll { overflow-x: auto; max-width: 100%; margin-bottom: 2.5em; }
tr > th:first-child { position: sticky; left: 0; z-index: 1; }
p.note { background: #fef3c7; border: 1px solid #b45309; padding: .5em .8em; }
caption { text-align: left; font-size: 1.3em; font-weight: bold; padding: .4em 0; }
th, td { border: solid #d1d5db; border-width: 0 1px 1px 0; padding: .35em .6em;
         vertical-align: top; }
td.cell, td.none { background: #fff; }
th { background: #f3f4f6; }
td.cell { text-align: right; font-family: DejaVu Sans Mono, monospace; font-size: 1.2em;
          white-space: nowrap; }
th { white-space: nowrap; }
details[open] > summary { outline: 3px solid #1d4ed8; }
summary { cursor: pointer; }
.picture { text-align: left; margin-top: .5em; overflow-x: auto; max-width: 90vw; }
.bad { color: #b91c1c; font-weight: bold; } .good { color: #15803d; }
.warn { color: #b45309; } .dim { color: #6b7280; }
p.caption { color: #4b5563; margin-top: -2em; margin-bottom: 1em; }
p.legend { color: #4b5563; margin: -.5em 0 1em; }
"""


def _html(text: Text) -> str:
    """A rich Text as HTML, its styles as the page's classes."""
    out, at = [], 0
    for span in sorted(text.spans, key=lambda s: s.start):
        out.append(escape(text.plain[at:span.start]))
        css = _CLASSES.get(str(span.style), "")
        out.append(f'<span class="{css}">{escape(text.plain[span.start:span.end])}</span>')
        at = span.end
    out.append(escape(text.plain[at:]))
    style = _CLASSES.get(str(text.style), "")
    body = "".join(out)
    return f'<span class="{style}">{body}</span>' if style else body


def anchor(r: RunResult) -> str:
    """The id of a cell's picture: `index.html#<id>` opens that cell."""
    return f"run-{r.stage.id}-{r.scenario.name}"


def _matrix(track: str, results: list[RunResult]) -> str:
    order = [sc.name for sc in canonical(track)]
    names = [n for n in order if any(r.scenario.name == n for r in results)]
    stages = list(dict.fromkeys(r.stage.name for r in results))
    by_key = {(r.stage.name, r.scenario.name): r for r in results}
    rows = [f'<div class="scroll"><table class="matrix" data-track="{escape(track)}">',
            f"<caption>{escape(track)} track</caption>",
            "<tr><th>stage</th>" + "".join(f"<th>{escape(n)}</th>" for n in names) + "</tr>"]
    for stage in stages:
        row = [f"<tr><th>{escape(stage)}</th>"]
        for name in names:
            r = by_key.get((stage, name))
            if r is None:
                row.append('<td class="none">—</td>')
                continue
            row.append(f'<td class="cell" data-stage="{escape(stage)}" '
                       f'data-scenario="{escape(name)}"><details><summary>'
                       f'{_html(report.marked_cell(r))}</summary>'
                       f'<div class="picture" id="{anchor(r)}">'
                       f'{pictures.svg(r)}</div></details></td>')
        rows.append("".join(row) + "</tr>")
    rows.append("</table></div>")
    caption = registry.track(track).report.MATRIX_CAPTION
    rows.append(f'<p class="caption">{escape(caption)}; click a cell for its run.</p>')
    rows += [f'<p class="legend">{escape(line)}</p>' for line in report.legend(results)]
    return "\n".join(rows)


def target(folder: Path, force: bool = False) -> Target:
    """Before any run: folder/index.html can take the page (checked now, written later)."""
    return Target(folder / "index.html", "--html", force, make_folder=True)


def write(page: Target, results: list[RunResult], notes: list[str] = ()) -> Path:
    """Write the page: `notes` first (a track left out, and why), then one matrix per track in
    the results, in registry order, in one rename (a failed or interrupted report leaves the
    previous page as it was)."""
    tracks = [t for t in registry.tracks() if any(r.stage.track == t for r in results)]
    body = "\n".join([*(f'<p class="note">{escape(n)}</p>' for n in notes),
                      *(_matrix(t, [r for r in results if r.stage.track == t]) for t in tracks)])
    return page.write(f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
                      f"<title>racelab report</title><style>{CSS}</style></head>\n<body>\n"
                      f"<h1>racelab report</h1>\n{body}\n</body></html>\n")
