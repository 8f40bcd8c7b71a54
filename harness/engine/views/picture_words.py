"""The words of a run's picture: what one op adds to its step (a lock taken or refused and who
holds it, a claim, a wait, a fault's act), a transaction's writes, a key cut short. Words for
people only: nothing decides on them."""

from __future__ import annotations

import re
from datetime import datetime

from harness.engine.model.history import ABORTS, F, Op, Type
from harness.engine.views.picture_intervals import Link

ACTS = {F.KILL: "killed", F.RESTART: "restarted", F.PAUSE: "stands still (SIGSTOP)",
        F.RESUME: "goes on (SIGCONT)", F.TERMINATE: "backend terminated"}

_ISO = re.compile(r"\d{4}-\d\d-\d\dT(\d\d:\d\d):\d\d(?:\.\d+)?(?:[-+]\d\d:\d\d|Z)?")


def short_key(key: str) -> str:
    """A key as the picture shows it: an ISO time in it cut to HH:MM."""
    return _ISO.sub(r"\1", key)


def _span(seconds: float) -> str:
    """A lease as people say it: `25 min`, `90s`."""
    return f"{seconds // 60:g} min" if seconds >= 60 and seconds % 60 == 0 else f"{seconds:g}s"


def op_label(op: Op, holders: list[Link], words: dict[str, str]) -> tuple[str, str] | None:
    """The kind and words one op adds to its step, or None."""
    v, who = op.value, " · ".join(f"{h.holder} holds the {h.what}" for h in holders)
    claimed = short_key(v.get("key", ""))
    if op.f is F.LOCK and op.type is Type.OK:
        lease = "" if not v.get("lease_s") else (
            f" (Redis, lease {_span(v['lease_s'])})" if v.get("redis")
            else f" (lease {_span(v['lease_s'])})")
        return ("won", f"lock ✓{lease}") if v.get("result") else (
            "refused", f"lock ✗ {who}".strip())
    if op.f is F.LOCK and op.type is Type.INFO and "released" in v:
        return ("plain", "lock released") if v["released"] else ("fault", "lock release failed")
    if op.f is F.CLAIM and op.type is not Type.INVOKE:
        if op.type is not Type.OK:
            return "refused", f"claim {claimed} failed".replace("  ", " ")
        if v.get("unanswered"):  # the store did not answer; the app chose on its own
            went = "went ahead" if v.get("result") else "held back"
            return "refused", f"claim {claimed} unanswered, {went}".replace("  ", " ")
        if v.get("result"):
            return "won", f"claim {claimed} ✓".replace("  ", " ")
        row = " · ".join(f"{h.holder}'s row" if h.what == "claim" else f"{h.holder} holds it"
                         for h in holders)
        return "refused", f"claim {claimed} ✗ {row}".replace("  ", " ").strip()
    if op.f is F.SENTINEL and op.type is Type.OK:
        word = words.get("sentinel", "sentinel")
        return ("refused", f"{word} found → stop") if v.get("result") else (
            "won", f"{word} absent")
    if op.f is F.BLOCK:
        return "refused", f"waits: {who}" if who else "waits"
    if op.f is F.HOLD and op.type is Type.INVOKE:
        return "plain", f"held before {v.get('before', 'its end')}"
    if op.f is F.CRASH and op.type is Type.OK:
        return "fault", f"crash ({op.process}) after {v.get('after', '')} {v.get('table', '')}"
    if op.f in ACTS:
        return "fault", f"{ACTS[op.f]} ({op.process})"
    if op.f is F.FAULT and op.type is not Type.OK:
        armed = f" armed in {v['armed_in']}" if "armed_in" in v else ""
        return "fault", f"{op.process}{armed}"
    if op.f is F.ERROR and v.get("sqlstate") in ABORTS:
        return "fault", "aborted, not retried"
    if op.f is F.ERROR:
        return "fault", "raised an error"
    if op.f is F.TICK and op.type is Type.INVOKE and "now" in v \
            and (now := datetime.fromisoformat(v["now"])).utcoffset() != op.t.utcoffset():
        return "plain", f"clock reads {now:%a %H:%M} {now.tzname()}"  # an app in its own zone
    if op.f in (F.TICK, F.TASK) and op.type is Type.FAIL:
        return ("plain", "skipped: paused") if v.get("skipped") else ("fault", f"{op.f} failed")
    if op.f in (F.TICK, F.TASK, F.TXN, F.COMMIT) and op.type is Type.INFO:
        return ("fault", f"{op.f} outcome unknown") if op.f is not F.TXN else None
    if op.f is F.COMMIT and op.type is Type.OK:
        return "plain", "COMMIT"
    if op.f is F.COMMIT and op.type is Type.FAIL and v.get("sqlstate") in ABORTS:
        return "fault", f"COMMIT refused: {ABORTS[v['sqlstate']]} ({v['sqlstate']})"
    if op.f is F.COMMIT and op.type is Type.FAIL:
        return "fault", "COMMIT failed"
    if op.type is Type.FAIL and v.get("sqlstate") in ABORTS:  # a statement PostgreSQL refused
        what = (f"{v['table']} {'UPDATE' if v.get('updated') else 'INSERT'}" if op.f is F.WRITE
                else str(op.f))
        return "fault", f"{what} refused: {ABORTS[v['sqlstate']]} ({v['sqlstate']})"
    if op.f is F.ROLLBACK and op.type is Type.OK:
        return "plain", "ROLLBACK"
    if op.f is F.DEDUP and op.type is Type.OK:
        key = short_key(v.get("key", ""))
        return ("won", f"dedup {key}: miss") if v.get("sent") else (
            "refused", f"dedup {key}: hit → held back")
    if op.f is F.DECIDE:
        if "pruned" in v:
            return "plain", f"pruned {len(v['pruned'])} entries"
        return "plain", "memory empty (fresh process)"
    if op.f is F.SEND:
        return "won", "sent"
    if op.f is F.SCHEDULE:
        return "plain", " ".join(f"{k} {short_key(str(x))}" for k, x in v.items() if k != "now")
    return None


def writes(ops: list[Op], indexes: list[int], words: dict[str, str]) -> str:
    rows: dict[str, int] = {}
    for k in indexes:
        op = ops[k]
        if op.f is F.WRITE and op.type is Type.OK:
            name = op.value.get("table", "?")
            name = words.get(f"{name} (updated)" if op.value.get("updated") else name, name)
            rows[name] = rows.get(name, 0) + int(op.value.get("rows", 0))
    wrote = ", ".join(f"{n} {name}" for name, n in rows.items() if n)
    return f"wrote {wrote}" if wrote else ""  # an UPDATE that matched nothing says nothing
