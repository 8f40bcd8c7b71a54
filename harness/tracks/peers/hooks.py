"""Inside a peers replica: the Redis lock a library takes (RedBeat's, a redis-py `Lock`), as ops
of the history, from outside the library's code like the SQL seams: each attempt to take it
(the key, whether it was taken, its lease `lease_s`), each extension of the lease (RedBeat
extends it on every tick, to `lease_s` from then), and its release. The hooks only watch: each
calls redis-py's own method and notes what it did."""

from __future__ import annotations

from typing import Any

from harness.engine.model.history import F, Type


def install(seams: Any) -> None:
    from redis.lock import Lock

    acquire, extend, release = Lock.do_acquire, Lock.do_extend, Lock.do_release

    def _key(lock: Lock) -> str:
        name = lock.name
        return name.decode() if isinstance(name, bytes) else str(name)

    def watched_acquire(self, token):
        value = {"key": _key(self), "redis": True, "lease_s": self.timeout}
        seams.op(Type.INVOKE, F.LOCK, value)
        got = acquire(self, token)
        seams.op(Type.OK, F.LOCK, {**value, "result": bool(got)})
        return got

    def watched_extend(self, additional_time, replace_ttl):
        value = {"key": _key(self), "lease_s": additional_time}
        try:
            done = extend(self, additional_time, replace_ttl)
        except Exception as e:
            seams.op(Type.INFO, F.LOCK, {**value, "extended": False, "error": type(e).__name__})
            raise
        seams.op(Type.INFO, F.LOCK, {**value, "extended": True})
        return done

    def watched_release(self, expected_token):
        try:
            release(self, expected_token)
        except Exception as e:
            seams.op(Type.INFO, F.LOCK, {"key": _key(self), "released": False,
                                         "error": type(e).__name__})
            raise
        seams.op(Type.INFO, F.LOCK, {"key": _key(self), "released": True})

    Lock.do_acquire, Lock.do_extend, Lock.do_release = \
        watched_acquire, watched_extend, watched_release
