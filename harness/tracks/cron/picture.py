"""What a cron-track run's picture marks, from its history: the payouts (a transaction that
wrote coin credits and committed; those beyond the slots' expected runs, in order, are the
duplicates), a slot missed where it fell due, and the shared state in words."""

from __future__ import annotations

from harness.engine.model.history import F, Op, Type
from harness.engine.model.result import RunResult
from harness.tracks.cron import schedule
from harness.tracks.cron.checker import slot_due

CREDITS = "token_transactions"


def payouts(ops: list[Op]) -> list[tuple[int, int]]:
    """(the op of the last coin credit, how many) per committed transaction that paid."""
    open_: dict[str, list[tuple[int, int]]] = {}
    found = []
    for i, op in enumerate(ops):
        p = op.process
        if op.f is F.TXN and op.type is Type.INVOKE:
            open_[p] = []
        elif op.f is F.WRITE and op.type is Type.OK and op.value.get("table") == CREDITS \
                and not op.value.get("updated"):
            open_.setdefault(p, []).append((i, int(op.value.get("rows", 0))))
        elif op.f is F.COMMIT and op.type is Type.OK and open_.get(p):
            found.append((open_[p][-1][0], sum(n for _, n in open_[p])))
            open_[p] = []
        elif op.f is F.TXN:
            open_.pop(p, None)
    return found


def picture_marks(result: RunResult, ops: list[Op]) -> dict[int, tuple[str, str]]:
    v = result.verdict
    good = v.runs - v.duplicates
    marks = {}
    for n, (i, coins) in enumerate(payouts(ops)):
        marks[i] = (("effect", f"payout: {coins} coin credits") if n < good
                    else ("duplicate", f"DUPLICATE payout: {coins} coin credits"))
    starts = [i for i, op in enumerate(ops) if op.f in (F.TICK, F.TASK) and op.type is Type.INVOKE]
    close = schedule.of(result.scenario)
    for slot in v.slots:
        due = slot_due(slot.key, close)
        if not slot.missed or due is None or not starts:
            continue
        at = next((i for i in starts if ops[i].t >= due), starts[-1])
        marks[at] = ("missed", f"slot {slot.key} due: MISSED")
    return marks


def picture_state(value: dict) -> tuple[str, dict[str, str]]:
    """The state lane's words: coins paid so far, claim rows, threads; the claim row kept."""
    claims = value.get("claim_rows")
    words = f"coins {value.get('coins_paid', 0)}"
    if claims is not None:
        words += f" · claim rows {claims}"
    words += f" · threads {value.get('threads', 0)}"
    return words, ({"claim": "claim row kept (worker_runs)"} if claims else {})
