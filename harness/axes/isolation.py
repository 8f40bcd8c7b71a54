"""The transaction isolation level of every replica's and task's PostgreSQL sessions.

Set from outside the stage's code, as the seams are: PGOPTIONS carries
`-c default_transaction_isolation=…` to every session the stage's processes open (libpq reads
it at connect), so each transaction the stage begins without naming a level runs at this one.
The harness's own sessions (the seed, the checker, the states it reads) keep the server's
default. Read committed is PostgreSQL's default, and the level every run had before the axis.
"""

from __future__ import annotations

from harness.engine.model.registry import add_axis

LEVELS = {"read-committed": "read committed", "repeatable-read": "repeatable read",
          "serializable": "serializable"}


class Isolation:
    name = "isolation"
    values = tuple(LEVELS)
    default = "read-committed"
    help = "the transaction isolation level of every replica's PostgreSQL sessions"

    def env(self, value: str) -> dict[str, str]:
        # PGOPTIONS splits at spaces; a backslash keeps "read committed" one argument
        return {"PGOPTIONS": "-c default_transaction_isolation=" + LEVELS[value].replace(
            " ", "\\ ")}

    def label(self, value: str) -> str:
        return LEVELS[value]


ISOLATION = add_axis(Isolation())
