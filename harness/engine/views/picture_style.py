"""How a run's picture looks: one colour per outcome, the intervals' shapes, the legend, and
the SVG text of each piece (pictures.py lays them out)."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from harness.engine.views import picture_data as data

FONT, SMALL, LANE, TITLE = 12, 11, 13, 16  # px at 880 px wide: never under 11
CHAR = FONT * 0.61  # a monospace glyph's advance

# an outcome: circle fill, text colour, the legend's words
OUTCOMES = {
    "effect": ("#15803d", "#166534", "landed once"),
    "duplicate": ("#dc2626", "#b91c1c", "duplicate"),
    "accepted": ("#d97706", "#92400e", "accepted duplicate (failing open)"),
    "missed": ("#7c3aed", "#6d28d9", "missed"),
    "fault": ("#111827", "#111827", "fault or failure"),
    "refused": ("#6b7280", "#374151", "refused, held back or waiting"),
    "won": ("#2563eb", "#1d4ed8", "taken: went ahead"),
    "plain": ("#ffffff", "#111827", "step: its number is its order in the instant"),
}
# an interval: fill, stroke, dash, y offset in the lane, height, the legend's words
SHAPES = {
    "tick": ("#f3f4f6", "#9ca3af", "", 2, 40, "tick or task"),
    "task": ("#f3f4f6", "#9ca3af", "", 2, 40, "tick or task"),
    "txn": ("#c7d2fe", "#4f46e5", "", 26, 9, "transaction (committed)"),
    "txn-fail": ("#e7e5e4", "#78716c", "4 3", 26, 9, "transaction rolled back"),
    "txn-info": ("#ffffff", "#111827", "2 2", 26, 9, "transaction, end unknown"),
    "lock": ("#0f766e", "#0f766e", "", 36, 5, "lock held"),
    "hold": ("url(#held)", "#b45309", "", 26, 9, "held before its end while others run"),
    "wait": ("#ffffff", "#6b7280", "3 3", 29, 3, "waiting"),
    "pause": ("url(#paused)", "#111827", "", 2, 40, "stopped (SIGSTOP)"),
    "fault-on": ("#fef3c7", "#111827", "", 26, 9, "fault active"),
}
DEFS = (
    '<defs><pattern id="held" width="6" height="6" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)"><rect width="6" height="6" fill="#fde68a"/>'
    '<rect width="3" height="6" fill="#f59e0b"/></pattern>'
    '<pattern id="paused" width="6" height="6" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)"><rect width="6" height="6" fill="#e5e7eb"/>'
    '<rect width="2" height="6" fill="#111827"/></pattern>'
    '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
    'markerHeight="7" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z" '
    'fill="#374151"/></marker></defs>')


def text(x: float, y: float, words: str, bold: bool = False, ink: str = "#111827",
         size: int = FONT, anchor: str = "", halo: bool = False) -> str:
    weight = ' font-weight="bold"' if bold else ""
    if halo:  # a white outline under the letters: legible over a line or a bar
        weight += ' stroke="#ffffff" stroke-width="3" paint-order="stroke"'
    where = f' text-anchor="{anchor}"' if anchor else ""
    return (f'<text x="{x:.0f}" y="{y:.0f}" font-size="{size}" fill="{ink}"{weight}{where}>'
            f"{escape(words)}</text>")


def _wrap(words: str, width: float, size: int) -> list[str]:
    per = max(10, int(width // (size * 0.61)))
    lines, line = [], ""
    for word in words.split(" "):
        if line and len(line) + 1 + len(word) > per:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line]


@dataclass
class Header:
    lines: list[str]
    height: float


def header(title: str, subtitle: str, legend: list[tuple[str, str]], w: int, pad: int
           ) -> Header:
    out = [text(pad, pad + TITLE, title, bold=True, size=TITLE)]
    y = pad + TITLE + 6
    for line in _wrap(subtitle, w - 2 * pad, FONT):
        y += 16
        out.append(text(pad, y, line, ink="#374151"))
    y += 10
    x = pad
    out.append('<g class="legend">')
    for key, words in legend:
        width = 22 + len(words) * CHAR + 14
        if x + width > w - pad:
            x, y = pad, y + 18
        out.append(f'<g class="legend-item" data-key="{escape(key)}">{_swatch(key, x, y)}'
                   f'{text(x + 22, y + 11, words)}</g>')
        x += width
    out.append("</g>")
    return Header(out, y + 26)


def _swatch(key: str, x: float, y: float) -> str:
    if key in OUTCOMES:
        fill = OUTCOMES[key][0]
        return (f'<circle cx="{x + 8:.0f}" cy="{y + 7:.0f}" r="7" fill="{fill}" '
                f'stroke="#6b7280"/>')
    if key == "link":
        return (f'<line x1="{x:.0f}" y1="{y + 7:.0f}" x2="{x + 16:.0f}" y2="{y + 7:.0f}" '
                f'stroke="#374151" stroke-width="1.5" marker-end="url(#arrow)"/>')
    if key == "state":
        return (f'<rect x="{x:.0f}" y="{y:.0f}" width="16" height="13" fill="#ccfbf1" '
                f'stroke="#0f766e"/>')
    fill, stroke, dash, _, h, _ = SHAPES[key]
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<rect x="{x:.0f}" y="{y + 7 - min(h, 13) / 2:.0f}" width="16" '
            f'height="{max(min(h, 13), 4)}" fill="{fill}" stroke="{stroke}"{dashes}/>')


def legend_for(drawn: data.Drawn) -> list[tuple[str, str]]:
    """Only what the picture shows, outcomes first."""
    kinds = {step.kind for step in drawn.steps}
    shapes = {_shape(iv) for iv in drawn.intervals if iv.start in drawn.step_of}
    out = [(k, OUTCOMES[k][2]) for k in OUTCOMES if k in kinds]
    seen = set()
    for key in SHAPES:
        if key in shapes and SHAPES[key][5] not in seen:
            seen.add(SHAPES[key][5])
            out.append((key, SHAPES[key][5]))
    if drawn.links:
        out.append(("link", "who holds what it wanted"))
    if any(spans for _, _, spans in drawn.states):
        out.append(("state", "shared state kept (a claim row, a key and its TTL)"))
    return out


def _shape(iv: data.Interval) -> str:
    if iv.f == "txn" and iv.how != "ok":
        return f"txn-{iv.how}"
    return iv.f if iv.f in SHAPES else "fault-on"


def interval(iv: data.Interval, x1: float, x2: float, y: float) -> str:
    """`data-from`, `data-to`: the op positions in the picture's order (`canonical`), the
    history's indexes but where processes raced."""
    fill, stroke, dash, dy, h, _ = SHAPES[_shape(iv)]
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<rect class="interval" data-f="{iv.f}" data-how="{iv.how}" '
            f'data-process="{escape(iv.process)}" '
            f'data-from="{iv.start}" data-to="{"" if iv.end is None else iv.end}" '
            f'x="{x1:.1f}" y="{y + dy:.0f}" width="{x2 - x1:.1f}" height="{h}" rx="2" '
            f'fill="{fill}" stroke="{stroke}"{dashes}/>')


def step(s: data.Step, x: float, y: float, label: tuple | None) -> str:
    fill, ink, _ = OUTCOMES[s.kind]
    number = "#111827" if s.kind == "plain" else "#ffffff"
    out = [f'<g class="mark" data-mark="{s.kind}" data-t="{s.t.isoformat()}" '
           f'data-ops="{",".join(map(str, s.ops))}" data-x="{x:.1f}">'
           f'<circle cx="{x:.1f}" cy="{y + 13:.0f}" r="9" fill="{fill}" stroke="#374151"/>',
           text(x, y + 17, str(s.n), bold=True, ink=number, size=SMALL, anchor="middle")]
    if label:
        lx, ly, words = label
        out.append(f'<line x1="{x:.1f}" y1="{y + 42:.0f}" x2="{max(lx, x):.1f}" '
                   f'y2="{ly - 11:.0f}" stroke="{fill if s.kind != "plain" else "#9ca3af"}"/>')
        out.append(text(lx, ly, words, ink=ink, bold=s.kind not in ("plain", "won"), halo=True))
    out.append("</g>")
    return "".join(out)


def span(key: str, words: str, x1: float, x2: float, y: float, at: float) -> str:
    return (f'<g class="span" data-key="{escape(key)}"><rect x="{x1:.1f}" y="{y:.0f}" '
            f'width="{x2 - x1:.1f}" height="14" fill="#ccfbf1" stroke="#0f766e"/>'
            f'{text(at, y + 11, words, ink="#134e4a", halo=True)}</g>')


def state_chip(at: float, x: float, y: float, words: str) -> str:
    return (f'<g class="state-change" data-x="{at:.1f}"><line x1="{at:.1f}" y1="{y - 12:.0f}" '
            f'x2="{at:.1f}" y2="{y + 3:.0f}" stroke="#0f766e" stroke-width="2"/>'
            f'{text(x, y, words, bold=True, ink="#134e4a")}</g>')


def zigzag(x: float, y1: float, y2: float) -> str:
    points, y, k = [], y1, 0
    while y < y2:
        points.append(f"{x + (4 if k % 2 else -4):.0f},{y:.0f}")
        y, k = y + 8, k + 1
    return (f'<polyline class="break" points="{" ".join(points)}" fill="none" '
            f'stroke="#9ca3af" stroke-width="2"/>')


def arrow(x: float, y_from: float, y_to: float, link: data.Link) -> str:
    down = y_to > y_from
    y1 = y_from + (10 if down else -10)
    y2 = y_to - (12 if down else -12)
    return (f'<line class="link" data-from="{escape(link.process)}" '
            f'data-holder="{escape(link.holder)}" data-what="{link.what}" x1="{x + 5:.1f}" '
            f'y1="{y1:.0f}" x2="{x + 5:.1f}" y2="{y2:.0f}" stroke="#374151" stroke-width="1.5" '
            f'marker-end="url(#arrow)"/>')
