"""A run as a picture: one lane per replica or task, plus the scheduler and the faults, against
virtual time, drawn as plain SVG text from the run's events.

Each instant of the run is a column; in it every lane lists what its process did, one mark per
line (lock, claim, writes, commit or rollback, a kill, a restart). The track names its side
effects (a payout, an alert sent) through its report's `picture_marks`, and which of them are
duplicates; the engine draws them and never asks which track it is drawing. The same run gives
the same SVG, byte for byte: nothing in it is measured in real time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from html import escape

from harness.engine import marks as assumptions
from harness.engine import registry
from harness.engine.clock import offset_label
from harness.engine.events import Event
from harness.engine.report import _describe
from harness.engine.runner import RunResult
from harness.engine.scenario import Scenario, format_duration

FONT = 20  # px: readable from the back of a room
CHAR_W = FONT * 0.62  # a monospace glyph's advance
LINE = FONT + 10
WRAP = 30  # characters per line of a mark
LANE_W = 150
PAD = 14
HEAD = 136  # title, subtitle and the time axis
FAULTS, SCHEDULER = "faults", "scheduler"  # the scheduler's events carry its name

# kind, fill, stroke, text colour, weight: high contrast on white, for a projector
_STYLE_TABLE = """
effect     #dbeafe #1d4ed8 #1e3a8a bold
duplicate  #dc2626 #7f1d1d #ffffff bold
accepted   #fde68a #b45309 #78350f bold
ok         #ffffff #9ca3af #111827 normal
skip       #f3f4f6 #6b7280 #374151 normal
commit     #dcfce7 #15803d #14532d bold
rollback   #ffedd5 #c2410c #7c2d12 bold
fault      #fef3c7 #b45309 #78350f bold
kill       #111827 #111827 #ffffff bold
restart    #ede9fe #6d28d9 #4c1d95 bold
error      #fee2e2 #b91c1c #7f1d1d bold
tick       #f9fafb #d1d5db #4b5563 normal
quiet      #f3f4f6 #d1d5db #6b7280 normal
"""
STYLES = {kind: (fill, stroke, ink, weight == "bold") for kind, fill, stroke, ink, weight
          in (line.split() for line in _STYLE_TABLE.strip().splitlines())}
_QUIET = {"held", "output", "exit", "log"}  # in the timeline, not in the picture
ROUTINE = {"tick", "ok", "commit", "rollback"}  # an instant of only these is a quiet one


@dataclass(frozen=True)
class Mark:
    lane: str
    t: datetime
    kind: str  # a key of STYLES
    label: str


def marks(result: RunResult) -> list[Mark]:
    """What the picture shows, from the events alone (and the track's word on its effects)."""
    report = registry.track(result.stage.track).report
    labels = report.LABELS
    picked = getattr(report, "picture_marks", lambda r: {})(result)
    replicas = set(result.scenario.replica_names)
    out: list[Mark] = []
    for i, e in enumerate(result.events):
        if i in picked:
            kind, label = picked[i]
            out.append(Mark(e.replica, e.t, kind, label))
        elif e.replica == "harness":
            out.extend(_fault_marks(e, replicas))
        elif e.event not in _QUIET or e.detail.startswith(("warning:", "error:")):
            out.append(Mark(e.replica, e.t, *_plain(e, labels)))
    return sorted(out, key=lambda m: m.t)  # stable: dispatch order within an instant


def _plain(e: Event, labels: dict[str, str]) -> tuple[str, str]:
    if e.event in ("tick", "task"):
        if e.outcome == "unknown" and e.detail:
            return "kill", f"{e.event}: {e.detail}"
        why = f" ({e.detail})" if e.detail and e.event == "tick" else ""
        return ("tick" if e.outcome == "ok" else "error"), f"{e.event} [{e.outcome}]{why}"
    if e.event == "sentinel":  # found says stop; absent says go on
        word = labels.get(e.event, e.event)
        found = e.detail in ("true", "present", "found")
        return ("skip", f"{word} {e.detail} → skip") if found else ("ok", f"{word} {e.detail}")
    if e.event in ("lock", "claim"):  # won says go on
        if e.detail == "true":
            return "ok", f"{e.event} ✓"
        return "skip", f"{e.event} ✗ → skip"
    if e.event in ("commit", "rollback"):
        return e.event, e.event.upper()
    if e.event in ("error", "dead-letter", "commit-failed"):
        return "error", _describe(e, labels)
    if e.event == "fault":  # a fault inside the replica (a crash its seam raised)
        return "fault", _describe(e, labels)
    if e.event == "log":  # only warnings and errors get this far
        return "fault", e.detail
    if e.event in ("blocked", "retry"):
        return "fault", _describe(e, labels)
    return "ok", _describe(e, labels)


def _fault_marks(e: Event, replicas: set[str]) -> list[Mark]:
    """A fault on the faults lane, and a kill or restart mark on the lane of each replica the
    fault acted on (its event's data: `on`, pairs of replica and act)."""
    out = [Mark(FAULTS, e.t, "fault", e.detail)]
    kind = e.data.get("fault", "")
    for name, act in e.data.get("on", ()):
        if name in replicas:
            out.append(Mark(name, e.t, *_on_the_replica(act, kind)))
    return out


_ACTS = {"kill": ("kill", "killed ({})"), "restart": ("restart", "restarted ({})"),
         "pause": ("fault", "stands still: SIGSTOP ({})"),
         "resume": ("restart", "goes on: SIGCONT ({})")}


def _on_the_replica(act: str, kind: str) -> tuple[str, str]:
    """What a fault did to a replica, as the picture says it."""
    style, words = _ACTS.get(act, ("fault", "{}"))
    return style, words.format(kind)


def _fold_quiet(found: list[Mark]) -> tuple[list[Mark], dict[datetime, datetime]]:
    """Instants in a row where every process only ticked and ended its transactions, with no
    effect, skip or fault, become one column: per lane, how many quiet ticks. Returns the marks
    and, for each folded column, the last instant it stands for."""
    times = sorted({m.t for m in found})
    quiet = {t for t in times if all(m.kind in ROUTINE for m in found if m.t == t)}
    groups: list[list[datetime]] = []
    for t in times:
        if t in quiet and groups and groups[-1][-1] in quiet and _next(times, groups[-1][-1]) == t:
            groups[-1].append(t)
        else:
            groups.append([t])
    out: list[Mark] = []
    spans: dict[datetime, datetime] = {}
    for group in groups:
        if len(group) < 2 or group[0] not in quiet:
            out += [m for m in found if m.t in group]
            continue
        spans[group[0]] = group[-1]
        ticks: dict[str, int] = {}
        for m in found:
            if m.t in group and m.kind == "tick":
                ticks[m.lane] = ticks.get(m.lane, 0) + 1
        out += [Mark(lane, group[0], "quiet", f"{n} quiet tick{'s' if n != 1 else ''}")
                for lane, n in ticks.items()]
    return out, spans


def _next(times: list[datetime], t: datetime) -> datetime | None:
    i = times.index(t) + 1
    return times[i] if i < len(times) else None


def _turn(s: Scenario) -> str:
    return (f" · each turn through the job's lock {format_duration(s.lock_turn)} (modelled)"
            if s.lock_turn else "")


def _when(t: datetime, spans: dict[datetime, datetime]) -> str:
    return f"{t:%a %H:%M}–{spans[t]:%H:%M}" if t in spans else f"{t:%a %H:%M:%S}"


def _runs(found: list[Mark]) -> list[tuple[Mark, int]]:
    """Like marks in a row (two COMMITs of one tick) as one mark and how many."""
    out: list[tuple[Mark, int]] = []
    for m in found:
        if out and out[-1][0] == m:
            out[-1] = (m, out[-1][1] + 1)
        else:
            out.append((m, 1))
    return out


def _wrap(text: str) -> list[str]:
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > WRAP:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line] if line else lines


def svg(result: RunResult) -> str:
    """The run's picture as SVG text."""
    found = marks(result)
    s = result.scenario
    lanes = [FAULTS] if any(m.lane == FAULTS for m in found) else []
    if any(m.lane == SCHEDULER for m in found):
        lanes.append(SCHEDULER)
    lanes += [*s.replica_names, *dict.fromkeys(m.lane for m in found
                                               if m.lane not in (*lanes, *s.replica_names))]
    found, spans = _fold_quiet(found)
    times = sorted({m.t for m in found})
    cells: dict[tuple[str, datetime], list[tuple[Mark, list[str]]]] = {}
    for m, n in _runs(found):
        label = f"{m.label} ×{n}" if n > 1 else m.label
        cells.setdefault((m.lane, m.t), []).append((m, _wrap(label)))
    widths = {t: max([len(offset_label(t, s.start)), 9,
                      *(len(line) for (_, when), items in cells.items() if when == t
                        for _, lines in items for line in lines)]) * CHAR_W + 3 * PAD
              for t in times}
    heights = {lane: max([1, *(sum(len(lines) for _, lines in items)
                               + 0.4 * (len(items) - 1)
                               for (name, _), items in cells.items() if name == lane)])
               * LINE + 2 * PAD for lane in lanes}
    width = LANE_W + sum(widths.values()) + PAD
    height = HEAD + sum(heights.values()) + PAD
    title = f"racelab run {result.stage.id} --scenario {s.name}"
    report = registry.track(result.stage.track).report
    verdict = report.cell(result).plain + assumptions.signs(
        assumptions.of_run(result.stage, s))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="DejaVu Sans Mono, monospace" '
           f'font-size="{FONT}" class="racelab-run" data-stage="{escape(result.stage.name)}" '
           f'data-scenario="{escape(s.name)}">',
           f'<rect width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>',
           f'<text x="{PAD}" y="{FONT + PAD}" font-size="{FONT + 6}" font-weight="bold">'
           f'{escape(title)}</text>',
           f'<text x="{PAD}" y="{2 * FONT + PAD + 10}" fill="#374151">{s.replicas} replicas · '
           f'seed {s.seed}{_turn(s)} · matrix cell: {escape(verdict)}</text>']
    x = LANE_W
    columns = {}
    for t in times:
        columns[t] = x
        out.append(f'<text x="{x + PAD:.0f}" y="{HEAD - 36}" font-weight="bold">'
                   f'{offset_label(t, s.start)}{" …" if t in spans else ""}</text>'
                   f'<text x="{x + PAD:.0f}" y="{HEAD - 12}" fill="#4b5563">'
                   f'{_when(t, spans)}</text>'
                   f'<line x1="{x:.0f}" y1="{HEAD - 6}" x2="{x:.0f}" y2="{height - PAD:.0f}" '
                   f'stroke="#e5e7eb"/>')
        x += widths[t]
    y = HEAD
    for n, lane in enumerate(lanes):
        band = "#f8fafc" if n % 2 else "#ffffff"
        out.append(f'<g class="lane" data-lane="{escape(lane)}">'
                   f'<rect x="0" y="{y:.0f}" width="{width:.0f}" height="{heights[lane]:.0f}" '
                   f'fill="{band}" stroke="#e5e7eb"/>'
                   f'<text x="{PAD}" y="{y + PAD + FONT:.0f}" font-weight="bold" '
                   f'font-size="{FONT + 4}">{escape(lane)}</text>')
        for t in times:
            out += _cell(cells.get((lane, t), []), columns[t], y, widths[t])
        out.append("</g>")
        y += heights[lane]
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _cell(items: list[tuple[Mark, list[str]]], x: float, y: float, width: float) -> list[str]:
    out = []
    top = y + PAD
    for m, lines in items:
        fill, stroke, ink, bold = STYLES[m.kind]
        h = len(lines) * LINE
        weight = ' font-weight="bold"' if bold else ""
        out.append(f'<g class="mark" data-mark="{m.kind}" data-t="{m.t.isoformat()}">'
                   f'<rect x="{x + PAD / 2:.0f}" y="{top:.0f}" width="{width - PAD:.0f}" '
                   f'height="{h:.0f}" rx="6" fill="{fill}" stroke="{stroke}" '
                   f'stroke-width="2"/>')
        for k, line in enumerate(lines):
            out.append(f'<text x="{x + PAD:.0f}" y="{top + (k + 1) * LINE - 9:.0f}" '
                       f'fill="{ink}"{weight}>{escape(line)}</text>')
        out.append("</g>")
        top += h + 0.4 * LINE
    return out
