"""What a run's picture shows, read from the run's history alone (never from an event's words).

The history's ops become *steps*: one process's consecutive ops that a reader sees as one move
(a lock taken, a claim lost, the writes of one transaction, a COMMIT and the ends after it).
Steps keep the history's total order; those of one instant are numbered from 1, so the order
within an instant shows. Intervals are the history's invoke/completion pairs (a tick, a
transaction, the time a lock is held, a hold before COMMIT, a pause); a refusal or a wait is
linked to the process that held what it wanted, when the history says who did. The track names
its side effects and misses (`picture_marks`) and words its shared state (`picture_state`).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field, replace
from datetime import datetime

from harness.engine.model.history import F, Op, Type
from harness.engine.views.picture_intervals import Interval, Link, intervals_and_links
from harness.engine.views.picture_words import ACTS, op_label, writes

FAULTS, SCHEDULER = "faults", "scheduler"
HIDDEN = {F.LOG, F.OUTPUT, F.EXIT, F.WAKEUP}
ENDS = {F.TICK, F.TASK, F.TXN, F.COMMIT, F.ROLLBACK}
# the outcome a step is drawn in, most telling first (pictures.STYLES has one colour each)
KINDS = ("duplicate", "missed", "accepted", "effect", "fault", "refused", "won", "plain")
MEANINGFUL = {F.LOCK, F.CLAIM, F.WRITE, F.SENTINEL, F.HOLD, F.BLOCK, F.CRASH, F.DEDUP, F.SEND,
              F.DECIDE}


@dataclass
class Step:
    process: str  # its lane
    t: datetime
    ops: list[int]
    kind: str = "plain"
    labels: list[str] = field(default_factory=list)
    n: int = 0  # its number within its instant
    many: int = 1  # decisions alike in a row it stands for

    def mark(self, kind: str, label: str) -> None:
        if KINDS.index(kind) < KINDS.index(self.kind):
            self.kind = kind
        if label and label not in self.labels:
            self.labels.append(label)


@dataclass
class Drawn:
    ops: list[Op]
    lanes: list[str]
    steps: list[Step]
    step_of: dict[int, int]  # op index -> position of its step
    intervals: list[Interval]
    links: list[Link]
    states: list[tuple[int, str, dict[str, str]]]  # (op position it follows, label, spans)

    def __post_init__(self) -> None:
        self.shown = sorted(self.step_of)  # the ops that have a step, in order


def lane_names(ops: list[Op], replicas: list[str]) -> list[str]:
    tasks = [op.process for op in ops if op.f is F.TASK and op.type is Type.INVOKE]
    lanes = [*replicas, *dict.fromkeys(p for p in tasks if p not in replicas)]
    if any(op.f is F.SCHEDULE and set(op.value) - {"start", "now"} for op in ops):
        lanes.append(SCHEDULER)
    if any(op.f is F.FAULT for op in ops):
        lanes.insert(0, FAULTS)
    return lanes


def _lane(ops: list[Op], i: int, lanes: list[str]) -> str | None:
    op = ops[i]
    if op.process in lanes and op.process not in (FAULTS, SCHEDULER):
        return op.process
    if op.f in ACTS:
        return op.value.get("replica") if op.value.get("replica") in lanes else FAULTS
    if op.f is F.CRASH:  # raised inside the process whose ops surround it
        return next((ops[k].process for k in range(i - 1, -1, -1) if ops[k].process in lanes),
                    None)
    if op.f is F.FAULT:
        return FAULTS
    if op.f is F.SCHEDULE:
        return SCHEDULER if set(op.value) - {"start", "now"} else None
    return None


def _empty_transactions(ops: list[Op]) -> set[int]:
    """The ops of transactions that took no lock, claimed, wrote, read the sentinel or held:
    a BEGIN … COMMIT with nothing in it is not worth a step."""
    hidden: set[int] = set()
    open_: dict[str, list[int]] = {}
    for i, op in enumerate(ops):
        mine = open_.get(op.process)
        if op.f is F.TXN and op.type is Type.INVOKE:
            open_[op.process] = [i]
        elif mine is not None:
            if op.f in MEANINGFUL:
                del open_[op.process]
            elif op.f in (F.COMMIT, F.ROLLBACK, F.TXN):
                mine.append(i)
                if op.f is F.TXN:
                    hidden.update(mine)
                    del open_[op.process]
    return hidden


def _joins(step: Step, ops: list[Op], op: Op) -> bool:
    """Whether `op` continues the step of the same process (one move to a reader)."""
    last = ops[step.ops[-1]]
    if op.type is not Type.INVOKE and last.type is Type.INVOKE and last.f is op.f \
            and op.f not in (F.TICK, F.TASK, F.TXN, F.HOLD):
        return True  # the completion of the statement just invoked
    if op.f is F.WRITE and last.f is F.WRITE:
        return True
    begins = all(ops[k].type is Type.INVOKE and ops[k].f in (F.TICK, F.TASK, F.TXN)
                 for k in step.ops)
    if begins and op.type is Type.INVOKE and op.f in (F.TICK, F.TASK, F.TXN):
        return True
    ending = last.f in ENDS and (last.type is not Type.INVOKE or last.f is F.COMMIT)
    return ending and op.f in ENDS and (op.type is not Type.INVOKE or op.f is F.COMMIT) \
        and op.f is not F.TXN or (ending and op.f is F.TXN and op.type is not Type.INVOKE)


def instants(ops: list[Op]) -> list[datetime]:
    """The instant each op is drawn at. An op's `t` is the instant the harness heard of it, and
    a process held across instants reports ops it took earlier late; virtual time never runs
    back, so an op happened no later than any op after it: the earliest `t` from it on."""
    out: list[datetime] = []
    for op in reversed(ops):
        out.append(min(op.t, out[-1]) if out else op.t)
    return out[::-1]


def steps_of(ops: list[Op], lanes: list[str], marked: dict | None = None
             ) -> tuple[list[Step], dict[int, int]]:
    """The steps, and the step of each op shown; an op the track marks is always shown."""
    marked = marked or {}
    hidden = _empty_transactions(ops)
    when = instants(ops)
    steps: list[Step] = []
    step_of: dict[int, int] = {}
    for i, op in enumerate(ops):
        if (i in hidden or op.f in HIDDEN or (op.f in ACTS and op.type is Type.INVOKE)) \
                and i not in marked:
            continue
        lane = _lane(ops, i, lanes)
        if lane is None:
            continue
        last = steps[-1] if steps else None
        if last and last.process == lane and last.t == when[i] and op.f not in ACTS \
                and _joins(last, ops, op):
            last.ops.append(i)
        else:
            steps.append(Step(lane, when[i], [i]))
        step_of[i] = len(steps) - 1
    steps = _alike_together(steps, ops, marked)
    step_of = {i: pos for pos, step in enumerate(steps) for i in step.ops}
    n, t = 0, None
    for step in steps:
        n = n + 1 if step.t == t else 1
        step.n, t = n, step.t
    return steps, step_of


def _alike(step: Step, ops: list[Op], marked) -> tuple | None:
    """What makes a decision step like the next: one process, one instant, one kind of
    decision with the same answers (the keys may differ)."""
    fs = {ops[k].f for k in step.ops}
    if len(fs) != 1 or not fs <= {F.DEDUP, F.CLAIM, F.SENTINEL, F.LOCK}:
        return None
    return (step.process, step.t, tuple((ops[k].f, ops[k].type, ops[k].value.get("result"),
                                         ops[k].value.get("sent"), marked.get(k, ("",))[0])
                                        for k in step.ops))


def _alike_together(steps: list[Step], ops: list[Op], marked) -> list[Step]:
    """Decisions alike in a row are one step, `many` of them (600 dedup lookups in one tick)."""
    out: list[Step] = []
    before = None
    for step in steps:
        sign = _alike(step, ops, marked)
        if sign is not None and sign == before:
            out[-1].ops += step.ops
            out[-1].many += 1
        else:
            out.append(step)
        before = sign
    return out


def build(ops: list[Op], states: list[dict], replicas: list[str], words: dict[str, str],
          track_marks: dict[int, tuple[str, str]], words_of_state) -> Drawn:
    """The picture's data: `states` as `History.to_json` gives them, `track_marks` the track's
    own marks by op index, `words_of_state` its wording of one state (label, spans)."""
    lanes = lane_names(ops, replicas)
    steps, step_of = steps_of(ops, lanes, track_marks)
    intervals, links = intervals_and_links(ops, instants(ops))
    intervals = [iv if iv.process in lanes else replace(iv, process=FAULTS) for iv in intervals
                 if iv.process in lanes or (iv.f == F.FAULT.value and FAULTS in lanes)]
    by_op: dict[int, list[Link]] = {}
    for link in links:
        by_op.setdefault(link.index, []).append(link)
    loud = _loud_ends(ops, intervals)
    # a transaction's end that lets go of a lock taken in it says so: the lesson of stage 01
    frees = {iv.end for iv in intervals if iv.f == "lock" and iv.end is not None
             and ops[iv.end].f in (F.COMMIT, F.ROLLBACK)}
    for i, pos in step_of.items():
        step = steps[pos]
        if i in track_marks:
            step.mark(*track_marks[i])
        elif (found := op_label(ops[i], by_op.get(i, []), words)) and (
                ops[i].f not in (F.COMMIT, F.ROLLBACK) or i in loud):
            step.mark(found[0], f"{found[1]}: lock released" if i in frees else found[1])
    for step in steps:
        if not any(k in track_marks for k in step.ops) and (wrote := writes(ops, step.ops, words)):
            step.mark("plain", wrote)
        if step.many > 1:  # the first decision's words stand for all of them
            step.labels = [f"{step.labels[0]} (×{step.many}, keys alike)"] if step.labels else []
    drawn_states = []
    for s in states:
        label, spans = words_of_state(s["value"])
        drawn_states.append((s["after"] if s["after"] is not None else -1, label, spans))
    return Drawn(ops, lanes, steps, step_of, intervals, links, drawn_states)


def canonical(ops: list[Op]) -> tuple[list[int], list[tuple[int, int]]]:
    """The order the picture follows, as op indexes. Within an instant the harness runs one
    process at a time until it holds, blocks or ends, always in the same order; once it lets
    the held ones go (the first hold completed), they run at once and the history interleaves
    them as the machine happened to. From there, each process's remaining ops of the instant
    are taken together, the processes in the order they first appeared in the run: one
    interleaving the run allowed (the process let go first ran first), the same every run.
    Returns the order and the spans of positions where processes raced."""
    when = instants(ops)
    first: dict[str, int] = {}
    for i, op in enumerate(ops):
        first.setdefault(op.process, i)
    out: list[int] = []
    raced: list[tuple[int, int]] = []
    k = 0
    while k < len(ops):
        end = k
        while end < len(ops) and when[end] == when[k]:
            end += 1
        free = next((i for i in range(k, end) if ops[i].f is F.HOLD
                     and ops[i].type is not Type.INVOKE), end)
        out += range(k, free)
        out += sorted(range(free, end), key=lambda i: first[ops[i].process])
        if free < end:
            raced.append((free, end))
        k = end
    return out, raced


def settled(states: list[dict], order: list[int], raced: list[tuple[int, int]]) -> list[dict]:
    """The states in the picture's order. A state read while processes raced depends on who
    finished first; of those read in one race only the last is kept, at the race's end."""
    at = {k: pos for pos, k in enumerate(order)}
    out: list[dict] = []
    for s in states:
        pos = at[s["after"]] if s["after"] is not None else None
        span = next(((a, b) for a, b in raced if pos is not None and a <= pos < b), None)
        if span and out and out[-1].get("race") == span:
            out.pop()
        out.append({**s, "after": span[1] - 1 if span else pos, "race": span})
    return out


def _loud_ends(ops: list[Op], intervals: list[Interval]) -> set[int]:
    """The COMMITs and ROLLBACKs worth a word: those ending a transaction that held a lock or
    was held before its end (where the lesson is when the lock goes)."""
    inside: dict[str, list[int]] = {}
    for iv in intervals:
        if iv.f in ("lock", "hold"):
            inside.setdefault(iv.process, []).append(iv.start)
    for starts in inside.values():
        starts.sort()
    out: set[int] = set()
    for iv in intervals:
        starts = inside.get(iv.process, [])
        k = bisect.bisect_left(starts, iv.start)
        if iv.f == "txn" and iv.end is not None and k < len(starts) and starts[k] <= iv.end:
            out |= {k for k in range(iv.start, iv.end + 1) if ops[k].process == iv.process
                    and ops[k].f in (F.COMMIT, F.ROLLBACK)}
    return out
