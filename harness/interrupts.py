"""Ctrl-C and SIGTERM: the first one interrupts the command, the next ones are ignored so the
cleanup finishes. Inside `shielded()` (creating or dropping a run's database, where an
interrupt half-way would leave one behind) the interrupt waits until the section ends. Once the
command has finished (`settle()`), the process only cleans up and exits: a signal then is
ignored, so it cannot cut the last DROP DATABASE in two or print a traceback at exit."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_fired: list[int] = []  # the first signal, once it came
_settled: list[bool] = []  # the command is over: signals are ignored
_pending: list[int] = []  # it came inside a shielded section of the main thread
_on_fire: list[Callable[[], None]] = []
_local = threading.local()


def install(*on_fire: Callable[[], None]) -> None:
    """Catch Ctrl-C and SIGTERM; `on_fire` run when the first comes (a stop flag a loop
    checks: the KeyboardInterrupt itself is lost if it lands in a finaliser, a __del__)."""
    _fired.clear()
    _settled.clear()
    _pending.clear()
    _on_fire[:] = on_fire
    sys.unraisablehook = _unraisable
    signal.signal(signal.SIGINT, _handler)
    signal.signal(signal.SIGTERM, _handler)


def _unraisable(unraisable) -> None:
    """A KeyboardInterrupt raised inside a finaliser or a gc callback is lost, and Python would
    print its traceback: say nothing (`fired()` still knows, and the command exits 130)."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        return
    sys.__unraisablehook__(unraisable)


def fired() -> bool:
    """Whether Ctrl-C or SIGTERM came before the command was over."""
    return bool(_fired)


def _handler(signum, frame) -> None:
    if _fired or _settled:
        return
    _fired.append(signum)
    for hook in _on_fire:
        hook()
    if getattr(_local, "depth", 0):  # handlers run in the main thread: its own sections
        _pending.append(signum)
        return
    raise KeyboardInterrupt


def settle() -> None:
    """From here on the process only cleans up and exits: ignore Ctrl-C and SIGTERM."""
    _settled.append(True)
    _pending.clear()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


@contextmanager
def shielded() -> Iterator[None]:
    """A section an interrupt must not cut in two; one that came meanwhile is raised after,
    by the main thread (a worker thread leaving a section of its own leaves it there: workers
    stop on the flag `install` was given)."""
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        yield
    finally:
        _local.depth -= 1
        if not _local.depth and _pending and threading.current_thread() is threading.main_thread():
            _pending.clear()
            raise KeyboardInterrupt
