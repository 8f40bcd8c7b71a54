"""Step mode's Redis holds (harness.engine.inside.seam_redis) without a server: the words shown for
a command or a pipeline, and a wrap that holds before the command only in step mode."""

from __future__ import annotations

import asyncio

import pytest
import redis
import redis.asyncio

from harness.engine.inside import seam_redis

PREFIX = "racelab:123_abc:"


class FakeSeams:
    def __init__(self, stepping: bool):
        self.stepping = stepping
        self.seen: list[str] = []

    def step(self, next_: str) -> None:
        self.seen.append(next_)


def test_a_command_is_one_line_without_the_runs_prefix():
    args = ("SET", f"{PREFIX}alert:low_credits:1", "A@2026-06-05T14:00:00-06:00", "NX", "PX",
            86400000)
    assert seam_redis.command_line(args, PREFIX) == (
        "SET alert:low_credits:1 A@2026-06-05T14:00:00-06:00 NX PX 86400000")
    assert seam_redis.command_line((b"GET", PREFIX.encode() + b"k"), PREFIX) == "GET k"
    assert seam_redis.command_line(("SET", "k", "two words")) == "SET k 'two words'"
    long = seam_redis.command_line(("SET", "k", "x" * 100))
    assert len(long) == seam_redis.WIDTH and long.endswith("…")


def test_a_pipeline_is_one_step_shown_as_its_batch():
    """Built and never sent: a client connects only when a command goes out."""
    for client in (redis.Redis(), redis.asyncio.Redis()):
        pipe = client.pipeline()
        pipe.set(f"{PREFIX}a", "1", nx=True, px=100)
        pipe.incr(f"{PREFIX}b")
        assert seam_redis.batch_line(pipe, PREFIX) == "MULTI SET a 1 NX PX 100; INCRBY b 1 EXEC"
        plain = client.pipeline(transaction=False)
        plain.get(f"{PREFIX}a")
        assert seam_redis.batch_line(plain, PREFIX) == "PIPELINE GET a"


def test_the_wrap_holds_before_the_command_in_step_mode_only():
    calls: list[str] = []

    def send(self, *args):
        calls.append(f"sent {' '.join(args)}")
        return "OK"

    async def send_async(self, *args):
        return send(self, *args)

    for stepping in (True, False):
        seams, calls[:] = FakeSeams(stepping), []
        words = lambda _, args: seam_redis.command_line(args)  # noqa: E731
        unanswered: list[str] = []
        held = seam_redis._wrap_sync(send, seams, words, unanswered)
        held_async = seam_redis._wrap_async(send_async, seams, words, unanswered)
        assert held(None, "GET", "k") == "OK"
        assert asyncio.run(held_async(None, "DEL", "k")) == "OK"
        assert calls == ["sent GET k", "sent DEL k"]
        assert seams.seen == (["GET k", "DEL k"] if stepping else [])
        assert unanswered == []


def test_a_command_that_raises_is_noted_by_its_error_and_raises_on():
    """What the alerts hooks read to tell a claim Redis never answered from a won one."""

    def refused(self, *args):
        raise redis.ConnectionError("refused")

    async def refused_async(self, *args):
        refused(self, *args)

    unanswered: list[str] = []
    words = lambda _, args: seam_redis.command_line(args)  # noqa: E731
    held = seam_redis._wrap_sync(refused, FakeSeams(False), words, unanswered)
    held_async = seam_redis._wrap_async(refused_async, FakeSeams(False), words, unanswered)
    with pytest.raises(redis.ConnectionError):
        held(None, "SET", "k", "v")
    with pytest.raises(redis.ConnectionError):
        asyncio.run(held_async(None, "SET", "k", "v"))
    assert unanswered == ["ConnectionError", "ConnectionError"]
