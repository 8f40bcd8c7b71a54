"""Who moves when among an instant's starts: the `Interleaver` a run is given, and the
`Moment`, the narrow handle through which the fleet (harness.engine.run.fleet) hands it each
instant that has starts, as a `RunControl` is a fault's.

Two interleavers ship: `HOLD_BEFORE_COMMIT`, the default run's, is the fleet's barrier (each
start dispatched in turn until it is about to end its transaction, blocked or done; then all
released), and step mode's `Stepper` (harness.engine.explore.steps) lets one process run one
statement at a time, as its chooser says.
"""

from __future__ import annotations

from datetime import datetime
from multiprocessing.connection import Connection
from typing import Protocol

from harness.engine.inside.messages import Done, Held, Stalled
from harness.engine.inside.messages import Tick as TickMessage
from harness.engine.model.history import Event, F, Type
from harness.engine.model.schedulers import Start
from harness.engine.model.world import STATE
from harness.engine.run import waits


class Interleaver(Protocol):
    """Who moves when among an instant's starts. The fleet hands it each instant that has
    starts, as a `Moment`; it plays them through that handle alone."""

    # Whether it holds a process before every statement (step mode): then the run's track must
    # be steppable, and no fault may act on a held transaction.
    every_statement: bool

    def instant(self, moment: Moment) -> None: ...


class HoldBeforeCommit:
    """The default run: the fleet's barrier at every instant (`Moment.barrier`)."""

    every_statement = False

    def instant(self, moment: Moment) -> None:
        moment.barrier()


HOLD_BEFORE_COMMIT = HoldBeforeCommit()


class Moment:
    """One instant's starts as an interleaver sees them. It names processes by their replica's or
    task's name, and records what they do in the run's history and timeline. The fleet is
    untyped here: the fleet module imports this one."""

    def __init__(self, fleet, t: datetime, batch: list[Start]):
        self._fleet = fleet
        self.t = t
        self.starts = {tick.replica: tick for tick in batch}
        fleet.log = {tick.replica: [] for tick in batch}
        self._moved: set[str] = set()
        fleet.since = len(fleet.history.ops)  # the ops of this instant begin here

    def barrier(self) -> None:
        """The default run's instant: each start runs until it holds before its transaction
        ends, blocks or ends, one at a time; then all are released."""
        self._fleet.barrier(self.t, list(self.starts.values()))

    def start(self, name: str, access: bool = False) -> None:
        """`name`'s tick begins, held before each statement and its COMMIT or ROLLBACK; with
        `access`, each hold says what its statement touches."""
        fleet, tick = self._fleet, self.starts[name]
        f = F.TICK if tick.command is None else F.TASK
        fleet.history.add(name, Type.INVOKE, f, tick.t, {"now": tick.now.isoformat(), "step": True})
        fleet.process(name).send(TickMessage(tick.now.isoformat(), False,
                                              fleet.armed_crash(tick), step=True,
                                              access=access))

    def pipe(self, name: str) -> Connection:
        """Where `name`'s next message arrives (to wait on)."""
        return self._fleet.process(name).conn

    def answer(self, name: str) -> Held | Done | Stalled:
        """`name`'s message, once its pipe has one, recorded: the ops of a Held, or the end of
        its tick (a Stalled tick is the interleaver's to report)."""
        fleet, tick = self._fleet, self.starts[name]
        r = fleet.process(name)
        msg = r.take()
        if isinstance(msg, Stalled):
            return msg
        if isinstance(msg, Held):
            fleet.history.from_process(name, tick.t, msg.ops)
        else:
            fleet.record(r, tick, msg)
        return msg

    def release(self, name: str) -> None:
        self._fleet.process(name).release()

    def kill(self, name: str) -> None:
        self._fleet.process(name).kill()

    def stepped(self, name: str, statement: str, position: int) -> None:
        """`name` was let run its next statement, the `position`th step of the instant."""
        self._fleet.history.add(name, Type.INFO, F.STEP, self.t,
                                {"next": statement, "position": position})
        if name not in self._moved:  # the timeline lists the ticks in the order they first moved
            self._moved.add(name)
            self._fleet.log[name] = self._fleet.log.pop(name)

    def blocked(self, name: str, on: list[str]) -> None:
        """`name` waits for the processes `on` (read from the lock table)."""
        self._fleet.history.add(name, Type.INFO, F.BLOCK, self.t, {"on": on})
        self._fleet.log[name].append(Event(self.t, name, "blocked",
                                          f"waits for {' and '.join(on)}"))

    def blocking(self, names: list[str]) -> dict[str, tuple[str, list[str]]]:
        """Of the processes `names`, each whose session waits on a lock: the wait event (tuple,
        transactionid, advisory, …) and the processes holding what it waits for."""
        fleet = self._fleet
        by_app = {fleet.process(n).app_name: n for n in names}
        return {by_app[app]: seen for app, seen in
                waits.blocking(fleet.conn, fleet.dbname, list(by_app)).items()}

    def backends(self, names: list[str]) -> dict[str, list[int]]:
        """The PostgreSQL server processes of each of `names`' sessions."""
        fleet = self._fleet
        by_app = {fleet.process(n).app_name: n for n in names}
        return {by_app[app]: pids for app, pids in
                waits.backends(fleet.conn, fleet.dbname, list(by_app)).items()}

    def sessions(self, name: str) -> list[tuple[str, str]]:
        """What each of `name`'s sessions is doing: (state, wait event)."""
        fleet = self._fleet
        return waits.sessions(fleet.conn, fleet.dbname, fleet.process(name).app_name)

    def state(self) -> dict | None:
        """The shared state the track's world reads now, if it reads one."""
        return STATE.of(self._fleet.world)(self._fleet.conn)

    def end(self) -> None:
        """The instant is over (a seam fault armed in it is disarmed, its events logged)."""
        self._fleet.end_instant()
