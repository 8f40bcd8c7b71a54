"""What the lab's in-process servers share: `start()` returns it; `with` starts and stops it."""

from __future__ import annotations

from typing import Self


class Background:
    """A server on a thread of the harness process (so it dies with it)."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
