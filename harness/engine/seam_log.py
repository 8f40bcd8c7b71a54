"""The app's own log records (INFO and up, of the loggers a track names) as timeline notes."""

from __future__ import annotations

import logging
import re
from typing import Protocol


class Noting(Protocol):
    def note(self, kind: str, detail: str = "") -> None: ...


# A library's own log line may time itself on the wall clock ("lasted 0.019 s"): on a virtual
# timeline that figure means nothing and would make two runs of one seed differ.
_WALL_SECONDS = re.compile(r"\b\d+\.\d+ ?s\b")


class Recorder(logging.Handler):
    def __init__(self, seams: Noting):
        super().__init__(logging.INFO)
        self.seams = seams

    def emit(self, record: logging.LogRecord) -> None:
        text = _WALL_SECONDS.sub("(wall-clock time)", record.getMessage())
        self.seams.note("log", f"{record.levelname.lower()}: {text}")


def install(seams: Noting, loggers: tuple[str, ...]) -> None:
    handler = Recorder(seams)
    for name in loggers:
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
