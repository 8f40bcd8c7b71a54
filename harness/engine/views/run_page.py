"""One offline page that steps through a run (`racelab run … --html FILE`): the run's picture,
then its history op by op, the current op highlighted (and the picture's step that holds it,
scrolled into the picture's own box) and the shared state after it, in the manner of
porcupine's visualiser. At 1280×720 the picture's box, the controls and the state fit on one
screen. The page carries the history and the states as JSON in a
`<script type="application/json">` and a small script walks them: previous / next, a slider,
the arrow keys; `FILE#step=N` opens at the op whose index is N, and each move updates the hash.
Nothing is fetched: no network, no file beside it.

The same view, `view(…)`, is what a cell of the report page opens below its matrix (page.py):
there the views are many, their ids prefixed by the cell's, and the hash names the cell
(`#run-03-staggered`, `#run-03-staggered/step=N`)."""

from __future__ import annotations

import json
from datetime import datetime
from html import escape

from harness.engine.model.result import RunResult
from harness.engine.views import pictures

SHORT = 60  # characters of an op's value shown in its line; the whole value is in the JSON

CSS = """
.picture { overflow: auto; max-width: 100%; max-height: 42vh; margin-bottom: .5em;
           border-bottom: 1px solid #e5e7eb; }
.picture g.mark.current circle { stroke: #f59e0b; stroke-width: 5; }
.controls { position: sticky; top: 0; background: #fff; padding: .5em 0;
            border-bottom: 1px solid #d1d5db; display: flex; gap: .6em; align-items: center; }
.controls input[type=range] { flex: 1; }
.panes { display: flex; gap: 1.5em; align-items: flex-start; margin-top: .5em; }
ol.ops { list-style: none; padding: 0; margin: 0; flex: 1 1 auto; min-width: 0;
         max-height: 28vh; overflow: auto; position: relative;
         font-family: DejaVu Sans Mono, monospace; font-size: .85em; }
ol.ops li { white-space: pre; padding: 0 .3em; cursor: pointer; }
ol.ops li.current { background: #1d4ed8; color: #fff; }
section.state { flex: 0 0 24em; }
section.state h2 { font-size: 1em; margin: 0 0 .3em; }
section.state p { margin: 0 0 .3em; }
section.state th { text-align: left; padding-right: 1em; font-weight: normal; color: #4b5563;
                   border: 0; background: none; }
section.state td { font-family: DejaVu Sans Mono, monospace; border: 0; }
p.dim { color: #6b7280; }
"""

PAGE_CSS = ("body { font-family: DejaVu Sans, sans-serif; margin: 1em 1.5em; color: #111827; }\n"
            "h1 { font-size: 1.4em; margin: 0 0 .4em; }\n")

# Replay(root, moved): one view's controls over its own embedded data; `moved(n)` is told of
# every move (the page puts it in the hash). The page and the report each add a few lines that
# say which view the keys move and what the hash means.
REPLAY = """
function Replay(root, moved) {
  const data = JSON.parse(root.querySelector("script.run-data").textContent);
  const ops = Array.from(root.querySelectorAll("ol.ops li"));
  const slider = root.querySelector("input.slider");
  const where = root.querySelector(".where");
  let step = 0;
  // the picture's steps, each with the ops it stands for (its data-ops), in the ops' order
  const marks = Array.from(root.querySelectorAll(".picture g.mark[data-ops]"))
    .map((g) => [g, g.dataset.ops.split(",").map(Number)]);
  let marked = null;
  // a field null in every state the run read (claim_rows where the stage has no claim table)
  const absent = new Set(data.states.length ? Object.keys(data.states[0].value).filter(
    (k) => data.states.every((s) => s.value[k] === null)) : []);

  function markAt(n) {  // the step holding op n, else the last one before it: what just happened
    let found = null, last = -1;
    for (const [g, at] of marks) {
      if (at.includes(n)) { found = g; break; }
      const before = Math.max(...at.filter((i) => i <= n));
      if (before > last) { last = before; found = g; }
    }
    if (marked) marked.classList.remove("current");
    marked = found;
    if (!found) return;
    found.classList.add("current");
    const box = root.querySelector(".picture"), r = found.getBoundingClientRect();
    const b = box.getBoundingClientRect();  // scroll the picture's own box, never the page
    if (r.left < b.left || r.right > b.right) box.scrollLeft += r.left - b.left - b.width / 2;
    if (r.top < b.top || r.bottom > b.bottom) box.scrollTop += r.top - b.top - b.height / 2;
  }

  function stateAfter(n) {  // the latest state read after a commit at or before op n
    let found = null;
    for (const s of data.states) if ((s.after === null ? -1 : s.after) <= n) found = s;
    return found;
  }

  function showState(n) {
    const s = stateAfter(n), box = root.querySelector("table.state-value");
    const after = root.querySelector(".state-after");
    box.replaceChildren();
    if (s === null) { after.textContent = "before any commit: nothing read yet"; return; }
    const op = data.history[s.after];
    after.textContent = op ? `after op ${s.after} (${op.process}'s ${op.f} ${op.type})`
                           : "read before any commit";
    for (const [key, value] of Object.entries(s.value)) {
      if (absent.has(key)) continue;  // null in every state: the stage has no such thing
      const row = box.insertRow(), th = document.createElement("th");
      th.textContent = key;
      row.append(th);
      row.insertCell().textContent = JSON.stringify(value);
    }
  }

  function keepInView(li) {  // scroll the list only, never the page away from the picture
    const list = li.parentElement, top = li.offsetTop, bottom = top + li.offsetHeight;
    if (top < list.scrollTop) list.scrollTop = top;
    else if (bottom > list.scrollTop + list.clientHeight)
      list.scrollTop = bottom - list.clientHeight;
  }

  function show(n) {
    if (ops.length === 0) return;
    ops[step].classList.remove("current");  // only two lines change: a week has many ops
    ops[step].removeAttribute("aria-current");
    step = Math.max(0, Math.min(ops.length - 1, n));
    ops[step].classList.add("current");
    ops[step].setAttribute("aria-current", "step");
    keepInView(ops[step]);
    slider.value = step;
    where.textContent = `step ${step} of ${ops.length - 1}`;
    showState(step);
    markAt(Number(ops[step].id.split("op-").pop()));
    moved(step);
  }

  root.querySelector("button.prev").onclick = () => show(step - 1);
  root.querySelector("button.next").onclick = () => show(step + 1);
  slider.oninput = () => show(Number(slider.value));
  ops.forEach((li, i) => li.onclick = () => show(i));
  return {show, slider, key(k) {
    return {ArrowLeft: step - 1, ArrowRight: step + 1, Home: 0, End: ops.length - 1}[k];
  }};
}

function onKeys(current) {  // the arrow keys move the view current() gives, if any
  document.addEventListener("keydown", (e) => {
    const view = current();
    if (!view || e.target === view.slider) return;  // the slider moves itself on arrows
    const to = view.key(e.key);
    if (to !== undefined) { e.preventDefault(); view.show(to); }
  });
}
"""

PAGE_SCRIPT = """
const view = Replay(document.querySelector(".replay"), (n) => {
  if (location.hash !== `#step=${n}`) location.replace(`#step=${n}`);
});
function fromHash() {
  const m = /^#step=(\\d+)$/.exec(location.hash);
  return m ? Number(m[1]) : 0;
}
onKeys(() => view);
window.addEventListener("hashchange", () => view.show(fromHash()));
view.show(fromHash());
"""


def page(result: RunResult) -> str:
    """The page of one run: its picture as pictures.svg draws it, and its history."""
    history, states = result.history.to_json() if result.history else ([], [])
    title = f"racelab run {result.stage.name} · {result.scenario.name}"
    return html(title, pictures.svg(result), history, states)


def html(title: str, svg: str, history: list[dict], states: list[dict]) -> str:
    """The page from data: a title, an SVG picture, and a run's history[] and states[] as
    `run --json` prints them."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{escape(title)}</title><style>{PAGE_CSS}{CSS}</style></head>\n<body>\n"
            f"<h1>{escape(title)}</h1>\n{view(svg, history, states)}\n"
            f"<script>{REPLAY}{PAGE_SCRIPT}</script>\n</body></html>\n")


def view(svg: str, history: list[dict], states: list[dict], prefix: str = "") -> str:
    """One run's picture and its step-through controls, as `<div class="replay">`; every id in
    it starts with `prefix` (none on a page of its own), so a page can hold many."""
    width = max((len(op["process"]) for op in history), default=0)
    lines = "\n".join(f'<li id="{prefix}op-{op["index"]}">{escape(op_line(op, width))}</li>'
                      for op in history)
    last = max(len(history) - 1, 0)

    def at(name: str) -> str:
        return f'class="{name}" id="{prefix}{name}"'

    return (f'<div class="replay"><div class="picture">{svg}</div>\n'
            f'<div class="controls"><button {at("prev")} type="button">◀ previous</button>'
            f'<input {at("slider")} type="range" min="0" max="{last}" value="0" '
            f'aria-label="step">'
            f'<button {at("next")} type="button">next ▶</button><span {at("where")}></span>'
            f"</div>\n"
            f'<div class="panes"><ol {at("ops")}>\n{lines}\n</ol>\n'
            f'<section {at("state")}><h2>shared state</h2><p {at("state-after")}></p>'
            f'<table {at("state-value")}></table></section></div>\n'
            f'<p class="dim">One line per op: index, time, process, type, what, value. '
            f"← → step through; the state is what the lab read after the latest commit.</p>\n"
            f'<script type="application/json" {at("run-data")}>{embed(history, states)}'
            f"</script></div>")


def embed(history: list[dict], states: list[dict]) -> str:
    """The data as JSON that cannot end its <script> early (every `<` escaped, as JSON allows)."""
    return json.dumps({"history": history, "states": states}).replace("<", "\\u003c")


def op_line(op: dict, width: int = 0) -> str:
    """One readable line: index, virtual time, process (padded to `width`, the longest name in
    the list), type, f, and a short value."""
    when = datetime.fromisoformat(op["t"]).strftime("%a %H:%M:%S")
    return (f'{op["index"]:>4}  {when}  {op["process"]:<{width}}  {op["type"]:<6} {op["f"]:<9} '
            f'{short(op["value"])}').rstrip()


def short(value: dict) -> str:
    """`key=value …`, cut to SHORT characters with an ellipsis when longer."""
    text = " ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in value.items())
    return text if len(text) <= SHORT else text[:SHORT - 1] + "…"
