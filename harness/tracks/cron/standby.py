"""A read replica that lags: the run's PostgreSQL is a primary with an asynchronous hot standby
of its own (harness.fault_tools.standby), and at the fault's time the standby's replay stands
still until the run ends. An app that reads a sentinel or a claim there, as a read-scaling
change would route its reads, sees the data as of that moment; one that reads the primary sees
every commit. A review in getsentry/sentry#108687 found replica reads in a drain loop causing
duplicate deliveries.

Replication lag is real and short; standing still for the rest of the run is the lab's choice,
the longest lag there is, marked where a count rests on it.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from harness.engine.model.faults import FaultKind
from harness.engine.model.history import HARNESS, Event, F, Type
from harness.fault_tools.standby import REPLICA_ENV, StandbyPair

if TYPE_CHECKING:
    from harness.engine.model.control import RunControl
    from harness.engine.model.scenario import Fault, Scenario


class ReplicaLag(FaultKind):
    name = "replica-lag"
    where = "env"
    track = "cron"
    borrowed_by = ("detours",)  # detour 08 reads its sentinel on the standby
    needs_at = True
    records_ops = True  # its op carries the positions the standby stood still at
    summary = ("the run's PostgreSQL is a primary with an asynchronous hot standby of its own "
               f"(the app is told it as {REPLICA_ENV}); at `at` the standby's replay stands "
               "still until the run ends: reads there see the data as of `at`")

    def start_server(self, s: Scenario) -> StandbyPair:
        return StandbyPair(f"scenario {s.name!r} ({self.name})")

    def strike(self, f: Fault, run: RunControl, t: datetime) -> list[Event]:
        run.emit(self.name, Type.INVOKE, F.FAULT, t, f.to_json())
        written, applied = run.server.pause_replay()
        run.emit(self.name, Type.OK, F.FAULT, t, {**f.to_json(), "primary_wal": written,
                                                   "standby_replayed_wal": applied})
        return [Event(t, HARNESS, "fault",
                      f"replica-lag: the standby's replay stands still at WAL {applied} (the "
                      f"primary's is {written}) until the run ends; WAL keeps arriving, none "
                      "is applied: what is read there is the data as of now")]
