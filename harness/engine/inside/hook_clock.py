"""The time a process spends in the lab's own hooks (around the app's SQL statements), so a
step's cost can be split into the app's share and the lab's: a hook's time counts, the wait
of a hold inside it does not, and a hook called inside another counts once."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable


class HookClock:
    def __init__(self) -> None:
        self.own_ns = 0  # in hooks since the last release
        self._since = 0  # when the outermost hook running now began (0: none is)

    def timed(self, hook: Callable) -> Callable:
        """`hook`, its time counted."""
        @functools.wraps(hook)
        def timed(*args, **kwargs):
            if self._since:  # inside another hook: that one counts
                return hook(*args, **kwargs)
            self._since = time.monotonic_ns()
            try:
                return hook(*args, **kwargs)
            finally:
                self.own_ns += time.monotonic_ns() - self._since
                self._since = 0
        return timed

    def hold(self, held: Callable[..., None], *args) -> None:
        """Call `held(*args, own_ns)`, which waits for a release: the wait is not counted, and
        the count starts again from the release."""
        if self._since:
            self.own_ns += time.monotonic_ns() - self._since
        held(*args, self.own_ns)
        self.own_ns = 0
        if self._since:
            self._since = time.monotonic_ns()
