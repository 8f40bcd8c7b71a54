"""One standalone page for a room without internet: every track's matrix, each cell a link that
opens its run below the matrix, never inside it: the picture and the step-through view of
run_page (previous / next, the slider, the arrow keys, the shared state after each op).
Nothing is fetched; `index.html#run-03-staggered` opens that cell, `…/step=N` at op N.

A run longer than MAX_OPS ops opens on its picture alone, with the command that writes its
own step-through page: a week's history (22,000 ops on 03) would make the page tens of MB."""

from __future__ import annotations

from html import escape
from pathlib import Path

from rich.text import Text

from harness.engine.model import axes, registry, stages
from harness.engine.model.result import RunResult
from harness.engine.views import pictures, run_page, tables
from harness.writes import Target

MAX_OPS = 2000  # a run with more ops opens on its picture alone (see the docstring)

_CLASSES = {tables.BAD: "bad", tables.GOOD: "good", tables.WARN: "warn", tables.DIM: "dim"}

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
td.cell a { color: inherit; text-decoration: none; display: block; }
td.cell a:hover, td.cell.open { outline: 3px solid #1d4ed8; }
section.run { border-top: 3px solid #1d4ed8; padding-top: .5em; margin-bottom: 2.5em; }
section.run h2 { margin: .2em 0 .4em; }
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
    return f"run-{r.stage.id}-{r.scenario.name}" + "".join(
        f"-{axis}-{value}" for axis, value in r.settings
        if value != axes.default(registry.axes()[axis]))  # a default: as before axes


def _matrix(track: str, results: list[RunResult]) -> str:
    names = tables.columns(results)
    stages = list(dict.fromkeys(r.stage.name for r in results))
    by_key = {(r.stage.name, r.column): r for r in results}
    rows = [f'<div class="scroll"><table class="matrix" data-track="{escape(track)}">',
            f"<caption>{escape(tables.matrix_title(results, f'{track} track'))}</caption>",
            "<tr><th>stage</th>" + "".join(f"<th>{_header(n, tables.varied(names))}</th>"
                                           for n in names) + "</tr>"]
    for stage in stages:
        row = [f"<tr><th>{escape(stage)}</th>"]
        for name in names:
            r = by_key.get((stage, name))
            if r is None:
                row.append('<td class="none">—</td>')
                continue
            row.append(f'<td class="cell" data-stage="{escape(stage)}" '
                       f'data-scenario="{escape(name[0])}" data-run="{anchor(r)}">'
                       f'<a href="#{anchor(r)}">{_html(tables.marked_cell(r))}</a></td>')
        rows.append("".join(row) + "</tr>")
    rows.append("</table></div>")
    caption = registry.track(track).report.MATRIX_CAPTION
    rows.append(f'<p class="caption">{escape(caption)}; click a cell for its run, shown '
                f"under the matrix.</p>")
    rows += [f'<p class="legend">{escape(line)}</p>' for line in tables.legend(results)]
    rows += [_run(r) for stage in stages for name in names
             if (r := by_key.get((stage, name))) is not None]
    return "\n".join(rows)


def _header(column, shown: set[str]) -> str:
    """A column's header in HTML: the scenario, then each run axis's value on a line."""
    return "<br>".join(escape(line) for line in tables.header(column, shown=shown).split("\n"))


def _run(r: RunResult) -> str:
    """A cell's run under its matrix, hidden until its cell is opened: the picture and the
    step-through view, or for a long run the picture and the command for its own page."""
    history, states = r.history.to_json() if r.history else ([], [])
    title = " · ".join([r.stage.name, tables.header(r.column, " · ")])
    if len(history) <= MAX_OPS:
        body = run_page.view(pictures.svg(r), history, states, prefix=f"{anchor(r)}-")
    else:
        command = (f"racelab run {stages.named(r.stage)} --scenario {r.scenario.name}"
                   f"{axes.options(r.settings)} --html FILE")
        body = (f'<div class="picture">{pictures.svg(r)}</div>\n<p class="dim">'
                f"{len(history):,} ops, too many for this page: <code>{escape(command)}</code> "
                f"writes a page that steps through them.</p>")
    return (f'<section class="run" id="{anchor(r)}" hidden><h2>{escape(title)}</h2>'
            f"{body}</section>")


# The hash names the open cell: `#run-ID` or `#run-ID/step=N`. Opening one shows its section
# (every other hidden), marks its cell, and starts its view the first time; moves update the hash.
SCRIPT = """
const views = {};
let open = null;
function opened() {
  const m = /^#(run-[^/]+)(?:\\/step=(\\d+))?$/.exec(location.hash);
  const section = m && document.getElementById(m[1]);
  if (!section || !section.classList.contains("run")) return;
  for (const s of document.querySelectorAll("section.run")) s.hidden = s !== section;
  for (const td of document.querySelectorAll("td.cell"))
    td.classList.toggle("open", td.dataset.run === m[1]);
  open = m[1];
  const root = section.querySelector(".replay");
  if (root && !views[open]) views[open] = Replay(root, (n) => {
    const hash = `#${section.id}/step=${n}`;
    if (location.hash !== hash) location.replace(hash);
  });
  if (root) views[open].show(m[2] ? Number(m[2]) : 0);
  if (!m[2]) section.scrollIntoView();
}
onKeys(() => views[open]);
window.addEventListener("hashchange", opened);
opened();
"""


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
                      f"<title>racelab report</title><style>{CSS}{run_page.CSS}</style>"
                      f"</head>\n<body>\n<h1>racelab report</h1>\n{body}\n"
                      f"<script>{run_page.REPLAY}{SCRIPT}</script>\n</body></html>\n")
