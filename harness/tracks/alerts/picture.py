"""What an alerts-track run's picture marks, from its history and the sink's counts: each
delivery on the decision that let it out (per alert key, those beyond what a shared dedup sends
are duplicates, or accepted ones when failing open paid for them), each alert missed on the
decision that held it back, and the shared state: deliveries and the Redis keys with their TTLs."""

from __future__ import annotations

from harness.engine.model.history import F, Op, Type
from harness.engine.model.result import RunResult
from harness.engine.views.picture_words import short_key as short

WINDOW_KEYS = "reconcile:"  # the listing's 2-minute claims: one per window, not the story


def _lets_out(op: Op, key: str) -> bool:
    v = op.value
    if op.f is F.DEDUP and op.type is Type.OK:
        return v.get("key") == key and bool(v.get("sent"))
    return (op.f is F.CLAIM and op.type is Type.OK and bool(v.get("result"))
            and str(v.get("key", "")).endswith(key))


def deliveries(result: RunResult, ops: list[Op]) -> list[tuple[int, str]]:
    """(op, alert key) per delivery the sink counted, in order (`ops` in any order that keeps
    each process's own): a delivery counted in the state
    read after a tick ended is that tick's, on its decision to send (else on the tick's end)."""
    ends = [(op.at, i) for i, op in enumerate(ops)
            if op.f in (F.TICK, F.TASK) and op.type is not Type.INVOKE]
    before: dict[str, int] = {}
    used: set[int] = set()
    found = []
    for state in sorted(result.history.states, key=lambda s: s.at):
        sent = state.value.get("by_key") or {}
        ended = [(at, i) for at, i in ends if at <= state.at]
        if ended:
            end = max(ended)[1]
            p = ops[end].process
            start = max((i for i in range(end) if ops[i].process == p
                         and ops[i].f in (F.TICK, F.TASK) and ops[i].type is Type.INVOKE),
                        default=0)
            for key, n in sorted(sent.items()):
                for _ in range(n - before.get(key, 0)):
                    at = next((i for i in range(start, end) if ops[i].process == p
                               and i not in used and _lets_out(ops[i], key)), end)
                    used.add(at)
                    found.append((at, key))
        before = dict(sent)
    return found


def picture_marks(result: RunResult, ops: list[Op]) -> dict[int, tuple[str, str]]:
    v = result.verdict
    allowed = {a.key: a.expected for a in v.alerts}
    every_one_accepted = v.accepted > 0 and v.accepted == v.duplicates
    failover = v.findings.get("redis-failover", {})
    lost = {c["key"].removeprefix("alert:") for c in failover.get("lost_claims", [])}
    seen: dict[str, int] = {}
    marks = {}
    for i, key in deliveries(result, ops):
        seen[key] = seen.get(key, 0) + 1
        if seen[key] <= allowed.get(key, 0):
            marks[i] = ("effect", f"alert sent: {key}")
        elif every_one_accepted or key in lost:
            marks[i] = ("accepted", f"accepted duplicate: {key}")
        else:
            marks[i] = ("duplicate", f"DUPLICATE alert: {key}")
    decisions = [(i, op) for i, op in enumerate(ops) if op.f in (F.DEDUP, F.CLAIM)]
    for key, missed, what in [*((a.key, a.missed, "alert") for a in v.alerts),
                              *((w.window.isoformat(), w.missed, "listing") for w in v.windows)]:
        if not missed:
            continue
        held = [i for i, op in decisions if i not in marks and _held_back(op, key)]
        for i in held[:missed]:  # where it was first due
            marks[i] = ("missed", f"MISSED {what}: {short(key)}")
    return marks


def _held_back(op: Op, key: str) -> bool:
    """A decision that kept `key`'s delivery (or listing) from going out."""
    v = op.value
    if op.f is F.DEDUP and op.type is Type.OK:
        return v.get("key") == key and not v.get("sent")
    return (op.f is F.CLAIM and op.type is not Type.INVOKE
            and str(v.get("key", "")).endswith(key) and not (
                op.type is Type.OK and v.get("result")))


def _ttl(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "no TTL"
    minutes = round(ms / 60000)
    return f"TTL {minutes // 60}h" if minutes % 60 == 0 and minutes else f"TTL {minutes}m"


def picture_state(value: dict) -> tuple[str, dict[str, str]]:
    keys = value.get("redis_keys")
    words = f"alerts delivered {value.get('deliveries', 0)}"
    if keys is None:
        return words + " · Redis unreachable", {}
    return words, {key: f"Redis {key} · {_ttl(ttl)}" for key, ttl in sorted(keys.items())
                   if not key.startswith(WINDOW_KEYS)}
