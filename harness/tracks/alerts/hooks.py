"""Inside an alerts replica: the decisions the app makes outside SQL, in its timeline.

Installed by the agent before the app is imported (the app imports these functions by name),
from outside its code like the SQL seams: a Redis claim and what it answered; an in-memory
dedup lookup, hit or miss, the table found empty in a fresh process, the entries a prune drops.
The hooks only watch: each calls the app's own function and notes what it returned or changed.
In step mode a replica also holds before each Redis command it sends
(harness.engine.inside.seam_redis), the run's key prefix left out of the command shown: the
stages share Redis as well as PostgreSQL.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
from typing import Any

from harness.engine.inside import seam_redis
from harness.engine.model.history import F, Type


def install(seams: Any) -> None:
    unanswered = seam_redis.install(seams, os.environ.get("REDIS_KEY_PREFIX", ""))
    if importlib.util.find_spec("myapp.claims"):  # a stage that claims in Redis
        claims = importlib.import_module("myapp.claims")
        claims.claim = _watch_claim(claims.claim, seams, unanswered)
    alerts = importlib.import_module("myapp.alerts")
    table = getattr(alerts, "_last_sent", None)  # a stage whose dedup is a dict in memory
    if table is not None:
        alerts.send_alert = _watch_dedup(alerts.send_alert, table, seams)


def _watch_claim(claim, seams, unanswered: list[str]):
    """`unanswered`: the Redis commands that raised (seam_redis), emptied before each claim."""

    @functools.wraps(claim)
    async def watched(*args, **kwargs) -> bool:  # called as the app calls it, whatever that is
        key = str(args[0] if args else kwargs.get("key", "?"))
        at = len(seams.notes)
        unanswered.clear()
        seams.op(Type.INVOKE, F.CLAIM, {"key": key})
        got = await claim(*args, **kwargs)
        if unanswered:  # Redis never said whose the key is: the app decided without it
            error = unanswered[-1]
            seams.op(Type.OK, F.CLAIM, {"key": key, "result": bool(got), "unanswered": error})
            went = "went ahead without it" if got else "held back"
            seams.note("decision", f"claim {key}: Redis did not answer ({error}); {went}", at)
            return got
        seams.op(Type.OK, F.CLAIM, {"key": key, "result": bool(got)})
        seams.note("decision", f"claim {key} → {str(got).lower()}", at)
        return got

    return watched


def _watch_dedup(send_alert, table: dict, seams):
    fresh = [True]  # the process's first look at its table

    @functools.wraps(send_alert)
    async def watched(alert, *args, **kwargs) -> bool:
        if fresh[0]:
            fresh[0] = False
            if not table:
                seams.note("decision", "dedup table empty: a fresh process remembers nothing")
                seams.op(Type.INFO, F.DECIDE, {"dedup_table": "empty"})
        before, at = dict(table), len(seams.notes)
        seams.op(Type.INVOKE, F.DEDUP, {"key": alert.key})
        sent = await send_alert(alert, *args, **kwargs)
        seams.op(Type.OK, F.DEDUP, {"key": alert.key, "result": "miss" if sent else "hit",
                                    "sent": bool(sent)})
        seams.note("decision", f"dedup {alert.key} → {'miss, sent' if sent else 'hit, held back'}",
                   at)
        dropped = sorted(key for key in before if key not in table)
        if dropped:
            some = ", ".join(dropped[:3]) + (", …" if len(dropped) > 3 else "")
            entries = "1 entry" if len(dropped) == 1 else f"{len(dropped)} entries"
            seams.note("decision", f"prune dropped {entries} ({some})", at + 1)
            seams.op(Type.INFO, F.DECIDE, {"pruned": dropped})
        return sent

    return watched
