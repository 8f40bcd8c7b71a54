"""A run as a picture, drawn as plain SVG text from the run's history (`picture_data`).

One lane per replica or task (and the faults, and a scheduler's own doings), and under them
the shared state the track reads after each commit. In a lane a tick and each transaction are
intervals, the time a lock is held is a bar inside them, a hold before COMMIT is striped, and
each step is a numbered circle in the colour of its outcome: the numbers give the order within
an instant. A refusal or a wait points at the lane of the process that held what it wanted.
Instants keep the history's order; between them 12 px stand for a minute, and a longer stretch
is a marked break. The picture is 880 px wide (a README column), its text never under 11 px:
a run too long for one row wraps into panels below. The same run draws the same SVG, byte
for byte: nothing in it is measured in real time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from html import escape

from harness.engine.model import assumptions, axes, registry, stages
from harness.engine.model.clock import offset_label
from harness.engine.model.result import RunResult
from harness.engine.model.scenario import format_duration
from harness.engine.model.tracks import PICTURE_MARKS, PICTURE_STATE
from harness.engine.views import picture_columns as cols
from harness.engine.views import picture_data as data
from harness.engine.views import picture_style as style

W, LEFT, RIGHT, PAD = 880, 86, 12, 12
STEP_W, STEP_SQUEEZED, COL_MIN, FOLD_W = 30, 22, 100, 150
PX_PER_MIN, GAP_MIN, GAP_MAX, BREAK_W = 12, 10, 72, 58
BAR, LINE, AXIS = 46, 16, 36
STATE = "shared state"
Z = {"tick": 0, "task": 0, "pause": 0, "txn": 1, "fault": 1, "hold": 2, "wait": 3, "lock": 4}


@dataclass
class Place:
    panel: int
    x: float


@dataclass
class Layout:
    at: dict[int, Place]  # step position -> where its circle is
    heads: list[tuple[int, float, str, str]]  # panel, x, time, offset
    gaps: list[tuple[int, float, float, str | None]]  # panel, x, width, break label
    folds: list[tuple[int, float, cols.Column]]
    ends: dict[int, float]  # panel -> right end of what is drawn in it
    panels: int


def _gap(delta: timedelta) -> tuple[float, str | None]:
    minutes = delta.total_seconds() / 60
    if minutes * PX_PER_MIN > GAP_MAX:
        return BREAK_W, format_duration(delta, signed=True)
    return max(GAP_MIN, minutes * PX_PER_MIN), None


def layout(columns: list[cols.Column], start) -> Layout:
    right = W - RIGHT
    out = Layout({}, [], [], [], {}, 1)
    panel, x, before = 0, float(LEFT), None

    def wrap() -> None:
        nonlocal panel, x
        out.ends[panel] = x
        panel, x = panel + 1, float(LEFT)
        out.panels = panel + 1

    for col in columns:
        width = FOLD_W if col.t_end else max(COL_MIN, len(col.steps) * STEP_W)
        if before is not None:
            gap, label = _gap(col.t - before)
            if x + gap + min(width, COL_MIN) > right:
                wrap()
            else:
                out.gaps.append((panel, x, gap, label))
                x += gap
        begin = x
        if col.t_end:
            when = f"{col.t:%H:%M}–{col.t_end:%H:%M}"
            out.heads.append((panel, x, when, offset_label(col.t, start) + " …"))
            out.folds.append((panel, x, col))
            for pos in col.steps:
                out.at[pos] = Place(panel, x + FOLD_W / 2)
            x += FOLD_W
        else:
            out.heads.append((panel, x, f"{col.t:%a %H:%M:%S}", offset_label(col.t, start)))
            step = STEP_W  # a column a little too wide for the row squeezes rather than wraps
            if (right - x) / STEP_W < len(col.steps) <= (right - x) / STEP_SQUEEZED:
                step = (right - x) / len(col.steps)
            for pos in col.steps:
                if x + step > right + 0.01:
                    wrap()
                    out.heads.append((panel, x, f"{col.t:%H:%M:%S}", "(cont.)"))
                    begin = x
                out.at[pos] = Place(panel, x + step / 2)
                x += step
            x = max(x, begin + COL_MIN) if begin + COL_MIN <= right else x
        before = col.t_end or col.t
    out.ends[panel] = x
    return out


def _place_of_op(drawn: data.Drawn, lay: Layout, i: int | None) -> Place | None:
    if i is None:
        return None
    pos = cols.step_from(drawn, i)  # an op with no step of its own: the next one that has
    return lay.at.get(pos) if pos is not None else None


def _pieces(a: Place, b: Place | None, lay: Layout, pad: float):
    """An interval from a to b cut at panel edges: (panel, x1, x2) pieces."""
    end = b or Place(lay.panels - 1, lay.ends[lay.panels - 1])
    for panel in range(a.panel, end.panel + 1):
        x1 = a.x - pad if panel == a.panel else LEFT - 4
        x2 = (end.x + pad if b else end.x) if panel == end.panel else lay.ends[panel] + 4
        yield panel, x1, max(x2, x1 + 2)


def _flow(items: list[tuple[float, str]]) -> list[tuple[float, int, str]]:
    """Labels at x, each on the first text row where it overlaps nothing: (x, row, text)."""
    rows: list[float] = []
    out = []
    for x, text in items:
        width = len(text) * style.CHAR
        x = max(LEFT, min(x, W - RIGHT - width))
        row = next((r for r, end in enumerate(rows) if end + 8 <= x), len(rows))
        if row == len(rows):
            rows.append(0.0)
        rows[row] = x + width
        out.append((x, row, text))
    return out


def drawn(result: RunResult) -> data.Drawn:
    """What the picture of a run shows: its history's steps, intervals, links and states, with
    the track's marks (`picture_marks`, by position in the picture's order of the ops) and its
    words for the state (`picture_state`)."""
    report = registry.track(result.stage.track).report
    ops = result.history.ops_in_order() if result.history else []
    _, states = result.history.to_json() if result.history else ([], [])
    order, raced = data.canonical(ops)
    ops, states = [ops[k] for k in order], data.settled(states, order, raced)
    marks = PICTURE_MARKS.of(report)(result, ops)
    return data.build(ops, states, list(result.scenario.replica_names), report.LABELS, marks,
                      PICTURE_STATE.of(report))


def svg(result: RunResult) -> str:
    """The run's picture as SVG text."""
    s = result.scenario
    report = registry.track(result.stage.track).report
    drawn_ = drawn(result)
    lay = layout(cols.columns(drawn_), s.start)
    verdict = report.cell(result).plain + assumptions.signs(result.marks)
    turn = (f" · each turn through the job's lock {format_duration(s.lock_turn)} (modelled)"
            if s.lock_turn else "")
    level = "".join(f"{axes.label(a, v)} · " for a, v in result.settings)
    head = style.header(f"racelab run {stages.named(result.stage)} --scenario {s.name}"
                        f"{axes.options(result.settings)}",
                        f"{s.replicas} replica{'s' * (s.replicas != 1)} · {level}seed {s.seed}"
                        f"{turn} · matrix cell: {verdict}"
                        f" · {PX_PER_MIN} px a minute between instants; a zigzag: a longer break",
                        style.legend_for(drawn_), W, PAD)
    body, y = head.lines, head.height
    for panel in range(lay.panels):
        part, y = _panel(drawn_, lay, panel, y)
        body += part
    height = y + PAD
    return "\n".join([
        # as wide as the page or column it is shown in (a projector's 1280 px, a README's
        # 880): its text scales with it, 11 px and up at 880
        f'<svg xmlns="http://www.w3.org/2000/svg" width="100%" '
        f'viewBox="0 0 {W} {height:.0f}" font-family="DejaVu Sans Mono, monospace" '
        f'font-size="{style.FONT}" class="racelab-run" data-stage="{escape(result.stage.name)}" '
        f'data-scenario="{escape(s.name)}">', style.DEFS,
        f'<rect width="{W}" height="{height:.0f}" fill="#ffffff"/>', *body, "</svg>"]) + "\n"


def _panel(drawn: data.Drawn, lay: Layout, panel: int, y: float) -> tuple[list[str], float]:
    out = [f'<g class="panel" data-panel="{panel}">']
    for p, x, when, offset in lay.heads:
        if p == panel:
            out.append(style.text(x + 2, y + 14, when, bold=True))
            out.append(style.text(x + 2, y + 29, offset, ink="#4b5563"))
    for p, x, width, label in lay.gaps:
        if p == panel and label:
            out.append(style.text(x + width / 2, y + 29, label, ink="#4b5563", size=style.SMALL,
                                  anchor="middle"))
    top, y = y, y + AXIS
    centres: dict[str, float] = {}
    lanes_out = []
    bands = []
    for n, lane in enumerate(drawn.lanes):
        part, height = _lane(drawn, lay, panel, lane, y, n)
        centres[lane] = y + 13
        bands += part[1]  # the lane's band and intervals lie under the arrows
        lanes_out += [part[0], *part[2:]]
        y += height
    part, height = _state_lane(drawn, lay, panel, y)
    lanes_out += part
    y += height
    out += bands
    for p, x, width, label in lay.gaps:  # a break runs through every lane
        if p == panel and label:
            out.append(style.zigzag(x + width / 2, top + AXIS, y))
    out += _links(drawn, lay, panel, centres)
    out += lanes_out
    out.append("</g>")
    return out, y + 10


def _lane(drawn: data.Drawn, lay: Layout, panel: int, lane: str, y: float, n: int
          ) -> tuple[list[str], float]:
    here = [(pos, step) for pos, step in enumerate(drawn.steps)
            if step.process == lane and lay.at[pos].panel == panel]
    folded = {pos for _, _, col in lay.folds for pos in col.steps}
    labels = _flow([(lay.at[pos].x - STEP_W / 2 + 2, " · ".join(step.labels))
                    for pos, step in here if step.labels and pos not in folded])
    height = BAR + LINE * (1 + max((row for _, row, _ in labels), default=-1)) + 8
    under = [f'<rect x="0" y="{y:.0f}" width="{W}" height="{height:.0f}" '
             f'fill="{"#f8fafc" if n % 2 else "#ffffff"}" stroke="#e5e7eb"/>']
    out = [f'<g class="lane" data-lane="{escape(lane)}" data-panel="{panel}">', under,
           style.text(PAD, y + 20, lane, bold=True, size=style.LANE)]
    for iv in sorted(drawn.intervals, key=lambda iv: (Z.get(iv.f, 1), iv.start)):
        if iv.process != lane or iv.start not in drawn.step_of:
            continue  # another lane's, or an empty transaction's (not drawn)
        a, b = _place_of_op(drawn, lay, iv.start), _place_of_op(drawn, lay, iv.end)
        if a is None or (b is not None and b.panel == a.panel and b.x == a.x
                         and drawn.step_of.get(iv.start) in folded):
            continue
        for p, x1, x2 in _pieces(a, b if iv.end is not None else None, lay, STEP_W * 0.42):
            if p == panel:
                under.append(style.interval(iv, x1, x2, y))
    for p, x, col in lay.folds:
        if p == panel and lane in col.quiet:
            k = col.quiet[lane]
            out.append(style.text(x + 6, y + 20, f"{k} quiet tick{'s' if k != 1 else ''}",
                                  ink="#4b5563"))
    by_pos = {pos: (x, row, text) for (pos, _), (x, row, text)
              in zip([h for h in here if h[1].labels and h[0] not in folded], labels,
                     strict=True)}
    for pos, step in here:
        if pos in folded:
            continue
        label = by_pos.get(pos)
        out.append(style.step(step, lay.at[pos].x, y, label and (
            label[0], y + BAR + LINE * (label[1] + 1) - 3, label[2])))
    out.append("</g>")
    return out, height


def _state_lane(drawn: data.Drawn, lay: Layout, panel: int, y: float
                ) -> tuple[list[str], float]:
    spans: dict[str, list] = {}  # key -> [first place, last place, label, open at the end]
    last = len(drawn.states) - 1
    for n, (after, _, keys) in enumerate(drawn.states):
        place = lay.at.get(cols.state_step(drawn, after))
        for key, words in keys.items():
            if key not in spans or spans[key][3] is False:
                spans.setdefault(key, [place, place, words, True])
        for key, span in spans.items():
            if span[3] is True and key not in keys:
                span[1], span[3] = place, False
            elif n == last and key in keys:
                span[3] = None  # held when the run ended
    changes = [(lay.at.get(cols.state_step(drawn, after)), label)
               for after, label, _ in cols.changes(drawn.states) if label]
    changes = [(p, label) for p, label in changes if p and p.panel == panel]
    chips = _flow([(_chip_x(p.x, label), label) for p, label in changes])
    rows = len(spans)
    height = 12 + LINE * rows + LINE * (1 + max((r for _, r, _ in chips), default=-1)) + 8
    out = [f'<g class="lane state" data-lane="{STATE}" data-panel="{panel}">',
           f'<rect x="0" y="{y:.0f}" width="{W}" height="{height:.0f}" fill="#f0fdfa" '
           f'stroke="#99f6e4"/>',
           style.text(PAD, y + 18, "shared", bold=True, size=style.LANE),
           style.text(PAD, y + 34, "state", bold=True, size=style.LANE)]
    for k, (key, (a, b, words, open_)) in enumerate(sorted(spans.items())):
        if a is None:
            continue
        for p, x1, x2 in _pieces(a, b if open_ is False else None, lay, 0):
            if p == panel:
                at = max(LEFT, min(x1 + 4, W - RIGHT - len(words) * style.CHAR))
                out.append(style.span(key, words, x1, x2, y + 6 + LINE * k, at))
    for (p, _), (x, row, text) in zip(changes, chips, strict=True):
        out.append(style.state_chip(p.x, x, y + 12 + LINE * rows + LINE * (row + 1) - 3, text))
    if not drawn.states and panel == 0:  # read after each commit: none, nothing read
        out.append(style.text(LEFT, y + 12 + LINE - 3, "nothing committed: no state read",
                              ink="#4b5563"))
    out.append("</g>")
    return out, height


def _chip_x(at: float, label: str) -> float:
    """A state's words start right of its mark, or end left of it near the right edge."""
    width = len(label) * style.CHAR
    return at + 5 if at + 5 + width <= W - RIGHT else at - 5 - width


def _links(drawn: data.Drawn, lay: Layout, panel: int, centres: dict[str, float]) -> list[str]:
    out = []
    for link in drawn.links:
        place = _place_of_op(drawn, lay, link.index)
        if place is None or place.panel != panel or link.holder not in centres:
            continue
        out.append(style.arrow(place.x, centres[link.process], centres[link.holder], link))
    return out
