"""The run-control handle a Fleet gives its faults' hooks (harness.engine.model.control.RunControl).

It acts on the fleet's processes by name and writes to the run's history and timeline; what a
hook did to a held replica (released, killed or kept it) it also records, in `acts`, for the
fleet to read: the held ticks and the barrier stay the fleet's own.
"""

from __future__ import annotations

import time
from datetime import datetime

from harness.engine.model.history import Event, F, Type
from harness.engine.run.replica import ReplicaDied

TERMINATE_TIMEOUT_S = 5.0


class FleetControl:
    """A RunControl over one Fleet (untyped here: the fleet module imports this one)."""

    def __init__(self, fleet) -> None:
        self._fleet = fleet
        self.world = fleet.world
        self.faults = fleet.s.faults
        self.replica_names = tuple(fleet.replicas)
        self.server = fleet.server
        self.database = fleet.dbname
        self.acts: dict[str, str] = {}  # replica -> "released", "killed" or "kept" (held
        # until `resume`): what the hook the fleet called last did to it

    def emit(self, process: str, type_: Type, f: F, t: datetime, value: dict | None = None
             ) -> None:
        self._fleet.history.add(process, type_, f, t, value)

    def abandon(self, replica: str, t: datetime, value: dict) -> None:
        self._fleet.history.abandon(replica, t, value)

    def tell(self, event: Event) -> None:
        self._fleet.events.append(event)

    def note(self, replica: str, event: Event) -> None:
        self._fleet.log[replica].append(event)

    def note_after(self, replica: str, event: Event) -> None:
        self._fleet.after_tick.setdefault(replica, []).append(event)

    def restart(self, replica: str) -> None:
        r = self._fleet.process(replica)
        r.stop()
        r.start()

    def kill(self, replica: str) -> None:
        self._fleet.process(replica).kill()
        self.acts[replica] = "killed"

    def pause(self, replica: str) -> None:
        self._fleet.process(replica).pause()

    def keep_held(self, replica: str) -> None:
        self.acts[replica] = "kept"

    def is_kept(self, replica: str) -> bool:
        return replica in self._fleet.kept

    def resume(self, replica: str, t: datetime) -> None:
        self._fleet.resume(replica, t)

    def execute(self, statement: str, params: tuple = ()) -> int:
        return max(self._fleet.conn.execute(statement, params).rowcount, 0)

    def terminate_backend(self, replica: str) -> int:
        conn, r = self._fleet.conn, self._fleet.process(replica)
        pids = [row[0] for row in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND application_name = %s "
            "AND pid <> pg_backend_pid()", (self._fleet.dbname, r.app_name))]
        conn.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", (pids,))
        deadline = time.monotonic() + TERMINATE_TIMEOUT_S
        while conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = ANY(%s)",
                           (pids,)).fetchone():
            if time.monotonic() > deadline:
                raise ReplicaDied(f"the backend of replica {replica} outlived "
                                  f"pg_terminate_backend by {TERMINATE_TIMEOUT_S:.0f}s")
        return len(pids)

    def reconnect(self) -> None:
        self._fleet.reconnect()

    def release(self, replica: str) -> None:
        self._fleet.process(replica).release()
        self.acts[replica] = "released"
