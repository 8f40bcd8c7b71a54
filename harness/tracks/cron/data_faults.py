"""The cron track's data faults: each one is an object whose `change` alters the seeded world
before the replicas start (harness.tracks.cron.world calls it; nothing asks a fault's name).

- section-missing: the "general" section is gone, so post_thread writes no summary thread;
- bot-missing: the bot user is gone, so post_thread writes no summary thread either;
- no-zombie-thread: no thread has been idle past 30 days, so the tick's housekeeping
  (close_zombie_threads) updates no row: two ticks of one instant write no row in common.

A fault of another's (a plugin's) is a `DataFault` with its own `change`, registered with
harness.engine.model.registry.add_fault. What the checker expects stays what the seed decided: a
data fault changes what the stage finds, not what a correct payout is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.engine.model.faults import Fault, FaultKind

if TYPE_CHECKING:
    import psycopg

    from harness.engine.model.scenario import Scenario


class DataFault(FaultKind):
    """A fault in the seeded data: `change` alters it, inside the seed's transaction."""

    where = "data"

    def change(self, cur: psycopg.Cursor, f: Fault, s: Scenario) -> None:
        """Alter the freshly seeded rows (users, sections, threads, activity) of a run of s."""


class SectionMissing(DataFault):
    name = "section-missing"
    summary = 'the "general" section does not exist, so post_thread writes nothing'

    def change(self, cur: psycopg.Cursor, f: Fault, s: Scenario) -> None:
        cur.execute("DELETE FROM sections WHERE slug = 'general'")


class BotMissing(DataFault):
    name = "bot-missing"
    summary = "the bot user does not exist, so post_thread writes nothing"

    def change(self, cur: psycopg.Cursor, f: Fault, s: Scenario) -> None:
        cur.execute("DELETE FROM users WHERE is_bot")


class NoZombieThread(DataFault):
    name = "no-zombie-thread"
    summary = ("no thread is idle past 30 days, so the housekeeping in every tick updates no "
               "row (two ticks then write no row in common)")

    def change(self, cur: psycopg.Cursor, f: Fault, s: Scenario) -> None:
        cur.execute("UPDATE threads SET closed = true WHERE NOT closed")


DATA_FAULTS = (SectionMissing(), BotMissing(), NoZombieThread())
