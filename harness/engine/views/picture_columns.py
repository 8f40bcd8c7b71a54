"""How a run's picture falls into columns: one per instant, and quiet instants in a row folded
into one; and where along them a state or an op with no step of its own is drawn."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import datetime

from harness.engine.model.history import F, Type
from harness.engine.views.picture_data import Drawn


@dataclass
class Column:
    t: datetime
    steps: list[int]  # positions in Drawn.steps
    t_end: datetime | None = None  # a fold of quiet instants: the last one it stands for
    quiet: dict[str, int] = field(default_factory=dict)  # lane -> quiet ticks folded


def columns(drawn: Drawn) -> list[Column]:
    """One column per instant, in the history's order; instants in a row that add nothing a
    reader has not seen (no side effect, fault, wait, new refusal or new state) fold into one."""
    cols: list[Column] = []
    for pos, step in enumerate(drawn.steps):
        if cols and cols[-1].t == step.t:
            cols[-1].steps.append(pos)
        else:
            cols.append(Column(step.t, [pos]))
    shown_state = {_state_step(drawn, after) for after, label, _ in _changes(drawn.states)}
    seen: set[tuple] = set()
    quiet = []
    for col in cols:
        loud = False
        for pos in col.steps:
            step = drawn.steps[pos]
            if step.kind == "fault":
                seen.clear()
            if pos in shown_state:
                seen.clear()
                loud = True
            sign = (step.process, tuple(step.labels))
            if step.kind not in ("plain", "won", "refused") or (
                    step.kind == "refused" and sign not in seen):
                loud = True
            if step.kind == "refused":
                seen.add(sign)
        quiet.append(not loud)
    out: list[Column] = []
    calm_before = False
    for col, calm in zip(cols, quiet, strict=True):
        if calm and calm_before:
            if out[-1].t_end is None:  # the lone quiet column before becomes a fold
                fold = Column(out[-1].t, [], out[-1].t)
                _fold(fold, out[-1], drawn)
                out[-1] = fold
            _fold(out[-1], col, drawn)
        else:
            out.append(col)
        calm_before = calm
    return out


def _fold(into: Column, col: Column, drawn: Drawn) -> None:
    into.t_end = col.t
    into.steps += col.steps
    for pos in col.steps:
        step = drawn.steps[pos]
        if any(drawn.ops[k].f in (F.TICK, F.TASK) and drawn.ops[k].type is Type.INVOKE
               for k in step.ops):
            into.quiet[step.process] = into.quiet.get(step.process, 0) + 1


def _changes(states: list[tuple[int, str, dict]]) -> list[tuple[int, str, dict]]:
    """The states whose words differ from the one before."""
    out, last = [], None
    for after, label, spans in states:
        if label != last:
            out.append((after, label, spans))
        last = label
    return out


def _state_step(drawn: Drawn, after: int) -> int | None:
    """The step a state is drawn at: the one holding the op it follows, or the last before."""
    k = bisect.bisect_right(drawn.shown, after) - 1
    return drawn.step_of[drawn.shown[k]] if k >= 0 else (0 if drawn.steps else None)


def step_from(drawn: Drawn, i: int) -> int | None:
    """The step of op i, or of the first op after it that has one."""
    k = bisect.bisect_left(drawn.shown, i)
    return drawn.step_of[drawn.shown[k]] if k < len(drawn.shown) else None


changes, state_step = _changes, _state_step
