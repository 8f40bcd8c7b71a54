"""Inside a detours replica: the Redis lock a detour takes (redis-py's `Lock`), as ops of the
history, from outside the app's code like the SQL seams: a lock op with the key, whether it was
taken and its lease (`lease_s`, the lock's timeout), and one more when it is released (or the
release failed). The hooks only watch: each calls redis-py's own method."""

from __future__ import annotations

from typing import Any

from harness.engine.history import F, Type


def install(seams: Any) -> None:
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
