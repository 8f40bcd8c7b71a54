"""Step mode's holds before Redis commands, from outside the stage's code.

A stage that shares Redis as well as PostgreSQL (the alerts track's claims) makes a schedule of
its Redis commands too: in step mode a replica holds before each command it sends, as it holds
before each SQL statement (harness.engine.inside.seams), and the person or explorer choosing
who moves sees the command next, on one line (`SET alert:low_credits:1 A@… NX PX 86400000`,
the run's key prefix left out). The wrap is on redis-py's classes, sync and asyncio alike: a command
(`Redis.execute_command`), a pipeline or transaction sent at once (`Pipeline.execute`, one
step for the batch), and what a pipeline sends before it (`immediate_execute_command`: WATCH
and the reads after it). Outside step mode the wraps only call through, noting each command
that raised instead of answering (`install`'s list, for a track's hooks: a claim Redis never
answered).

A Redis command does not wait on another client, so nothing here reads who waits for whom; a
blocking command (BLPOP, XREAD BLOCK, WAIT) would, and no stage that steps sends one.
A track installs this from its hooks module (`SeamRules.hooks`), before the app is imported.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable
from typing import Any

WIDTH = 72  # as a shortened SQL statement
_CLASSES = ("redis.client", "redis.asyncio.client")


def install(seams: Any, prefix: str = "") -> list[str]:
    """Hold before every Redis command in step mode (`seams.step`); `prefix`, the run's key
    prefix, is left out of the words shown. Returns the list each command that raises appends
    its error's name to (its reader empties it when it likes)."""
    unanswered: list[str] = []
    for module in _CLASSES:
        m = importlib.import_module(module)
        wrap = _wrap_async if module.startswith("redis.asyncio") else _wrap_sync
        for cls, attr, words in (
                (m.Redis, "execute_command", lambda _, args: command_line(args, prefix)),
                (m.Pipeline, "immediate_execute_command",
                 lambda _, args: command_line(args, prefix)),
                (m.Pipeline, "execute", lambda pipe, _: batch_line(pipe, prefix))):
            setattr(cls, attr, wrap(getattr(cls, attr), seams, words, unanswered))
    return unanswered


def _wrap_sync(original: Callable, seams: Any, words: Callable,
               unanswered: list[str]) -> Callable:
    @functools.wraps(original)
    def held(self, *args, **options):
        if seams.stepping:
            seams.step(words(self, args))
        try:
            return original(self, *args, **options)
        except Exception as e:
            unanswered.append(type(e).__name__)
            raise

    return held


def _wrap_async(original: Callable, seams: Any, words: Callable,
                unanswered: list[str]) -> Callable:
    @functools.wraps(original)
    async def held(self, *args, **options):
        if seams.stepping:  # the hold blocks the loop: the process is waiting, as under SQL
            seams.step(words(self, args))
        try:
            return await original(self, *args, **options)
        except Exception as e:
            unanswered.append(type(e).__name__)
            raise

    return held


def command_line(args: Iterable[Any], prefix: str = "", width: int = WIDTH) -> str:
    """One command on one line: `SET alert:x A@… NX PX 120000`, a key without the prefix."""
    return _cut(" ".join(_word(arg, prefix) for arg in args), width)


def batch_line(pipe: Any, prefix: str = "", width: int = WIDTH) -> str:
    """A pipeline's batch on one line: its commands by `;`, MULTI … EXEC for a transaction."""
    commands = "; ".join(command_line(args, prefix, width) for args, _ in pipe.command_stack)
    # a transaction: `transaction` in redis.client, `is_transaction` in redis.asyncio (where
    # `transaction` is a method), `explicit_transaction` once MULTI was called on it
    names = ("transaction", "is_transaction", "explicit_transaction")
    if any(getattr(pipe, name, None) is True for name in names):
        return _cut(f"MULTI {commands} EXEC", width)
    return _cut(f"PIPELINE {commands}", width)


def _word(arg: Any, prefix: str) -> str:
    text = arg.decode(errors="replace") if isinstance(arg, bytes) else str(arg)
    if prefix and text.startswith(prefix):
        text = text[len(prefix):]
    return text if text and not any(c.isspace() for c in text) else repr(text)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"
