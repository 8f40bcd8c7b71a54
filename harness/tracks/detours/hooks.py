"""Inside a detours replica: the Redis lock a detour takes (redis-py's `Lock`), as ops of the
history, from outside the app's code like the SQL seams: a lock op with the key, whether it was
taken and its lease (`lease_s`, the lock's timeout), and one more when it is released (or the
release failed). The elected leader's lease row (myapp.leader.heartbeat) likewise: taken, found
held by another, or renewed by its holder (an extension to `lease_s` from then). The hooks only
watch: each calls redis-py's or the app's own function."""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from harness.engine.model.history import F, Type


def install(seams: Any) -> None:
    _watch_redis_lock(seams)
    if importlib.util.find_spec("myapp.leader"):  # a detour that elects a leader
        leader = importlib.import_module("myapp.leader")
        leader.heartbeat = _watch_heartbeat(leader.heartbeat, leader.LEASE, seams)


def _watch_heartbeat(heartbeat, lease, seams):
    holding: set[str] = set()  # the leases this process holds, as far as it knows

    async def watched(name: str, now):
        value = {"key": f"lease {name}", "lease": "row", "lease_s": lease.total_seconds()}
        if name not in holding:
            seams.op(Type.INVOKE, F.LOCK, value)
        until = await heartbeat(name, now)
        if name in holding and until is not None:
            seams.op(Type.INFO, F.LOCK, {**value, "extended": True})
        elif name not in holding:
            seams.op(Type.OK, F.LOCK, {**value, "result": until is not None})
        (holding.add if until is not None else holding.discard)(name)
        return until

    return watched


def _watch_redis_lock(seams: Any) -> None:
    from redis.asyncio.lock import Lock

    acquire, release = Lock.acquire, Lock.release

    def _key(lock: Lock) -> str:
        name = lock.name
        return name.decode() if isinstance(name, bytes) else str(name)

    async def watched_acquire(self, *args, **kwargs):
        value = {"key": _key(self), "redis": True, "lease_s": self.timeout}
        seams.op(Type.INVOKE, F.LOCK, value)
        got = await acquire(self, *args, **kwargs)
        seams.op(Type.OK, F.LOCK, {**value, "result": bool(got)})
        return got

    async def watched_release(self):
        try:
            await release(self)
        except Exception as e:
            seams.op(Type.INFO, F.LOCK, {"key": _key(self), "released": False,
                                         "error": type(e).__name__})
            raise
        seams.op(Type.INFO, F.LOCK, {"key": _key(self), "released": True})

    Lock.acquire, Lock.release = watched_acquire, watched_release
