"""Faults on the replicas' OS processes and connections, carried out by the runner.

- deploy-restart: the replica (every replica if none is named) is replaced by a fresh process;
- kill-mid-tick: SIGKILL inside the replica's open transaction; the orchestrator restarts it;
- terminate-backend: pg_terminate_backend on its connection inside the open transaction;
- crash-after-first-write: the job raises right after its first write to a table the track
  names (a seam fault: the hook in the replica process raises; the runner only arms it).
"""

from __future__ import annotations

import time
from datetime import datetime

from harness.engine import registry
from harness.engine.clock import Tick
from harness.engine.events import Event
from harness.engine.faults import Fault, FaultKind
from harness.engine.fleet import HARNESS, Fleet
from harness.engine.history import F, Type
from harness.engine.replica import Replica, ReplicaDied
from harness.engine.scenario import Scenario

TERMINATE_TIMEOUT_S = 5.0


class DeployRestart(FaultKind):
    name = "deploy-restart"
    summary = ("the replica (every replica if none is named) is replaced by a fresh process; "
               "its ticks restart from its boot")
    needs_at = True
    records_ops = True

    def boots(self, f: Fault, s: Scenario) -> dict[str, list[datetime]]:
        if f.at is None:
            return {}
        return {name: [f.at] for name in ([f.replica] if f.replica else s.replica_names)}

    def strike(self, f: Fault, fleet: Fleet, t: datetime) -> list[Event]:
        events = []
        for name in [f.replica] if f.replica else list(fleet.replicas):
            r = fleet.replicas[name]
            fleet.history.add(f.kind, Type.INVOKE, F.RESTART, t, {"replica": name})
            r.stop()
            r.start()
            fleet.history.add(f.kind, Type.OK, F.RESTART, t, {"replica": name})
            events.append(Event(t, HARNESS, "fault",
                                f"deploy: replica {name} replaced by a fresh process",
                                data={"fault": "deploy", "on": [(name, "restart")]}))
        return events


class Interrupting(FaultKind):
    """A fault on one replica's first transaction at or after `at`, while it is held open."""

    needs_at = True
    needs_replica = True
    records_ops = True

    def interrupts(self, f: Fault) -> bool:
        return True


class KillMidTick(Interrupting):
    name = "kill-mid-tick"
    summary = ("SIGKILL the replica inside its first transaction at or after `at`; "
               "the orchestrator restarts it")

    def interrupt(self, f: Fault, fleet: Fleet, r: Replica, running: dict[str, Tick]) -> None:
        """SIGKILL inside the open transaction; PostgreSQL rolls it back. The orchestrator
        restarts the container: a fresh process takes the replica's place at once."""
        tick = running.pop(r.name)
        ops = fleet.history
        ops.add(f.kind, Type.INVOKE, F.KILL, tick.t, {"replica": r.name, "signal": "SIGKILL"})
        r.kill()
        ops.add(f.kind, Type.OK, F.KILL, tick.t, {"replica": r.name, "signal": "SIGKILL"})
        ops.abandon(r.name, tick.t, {"outcome": "unknown", "killed": True})
        fleet.log[r.name][:0] = [
            Event(tick.t, r.name, "tick", "killed before its transaction ended", "unknown"),
            Event(tick.t, HARNESS, "fault", f"kill-mid-tick: SIGKILL replica {r.name} "
                                            "while its transaction is open",
                  data={"fault": f.kind, "on": [(r.name, "kill")]}),
        ]
        ops.add(f.kind, Type.INVOKE, F.RESTART, tick.t, {"replica": r.name})
        r.start()
        ops.add(f.kind, Type.OK, F.RESTART, tick.t, {"replica": r.name})


class TerminateBackend(Interrupting):
    name = "terminate-backend"
    summary = ("pg_terminate_backend on the replica's connection inside its first transaction "
               "at or after `at`; its COMMIT fails and the process goes on")

    def interrupt(self, f: Fault, fleet: Fleet, r: Replica, running: dict[str, Tick]) -> None:
        """pg_terminate_backend on the replica's connection inside its open transaction, then
        let the replica go on: its COMMIT meets a dead connection, an outcome it cannot know."""
        conn = fleet.conn
        at = running[r.name].t
        fleet.history.add(f.kind, Type.INVOKE, F.TERMINATE, at, {"replica": r.name})
        pids = [row[0] for row in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND application_name = %s "
            "AND pid <> pg_backend_pid()", (fleet.dbname, r.app_name))]
        conn.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", (pids,))
        deadline = time.monotonic() + TERMINATE_TIMEOUT_S
        while conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = ANY(%s)",
                           (pids,)).fetchone():
            if time.monotonic() > deadline:
                raise ReplicaDied(f"the backend of replica {r.name} outlived "
                                  f"pg_terminate_backend by {TERMINATE_TIMEOUT_S:.0f}s")
        fleet.history.add(f.kind, Type.OK, F.TERMINATE, at, {"replica": r.name,
                                                              "backends": len(pids)})
        fleet.log[r.name].append(Event(
            running[r.name].t, r.name, "fault",
            "terminate-backend: connection ended inside the open transaction, which the server "
            "rolls back: none of its writes land"))
        r.release()


class CrashAfterFirstWrite(FaultKind):
    name = "crash-after-first-write"
    where = "seam"
    summary = ("the job raises right after its first write to a table its track names (a "
               "payout row on the cron track), once: in the first process (the named "
               "replica's, if one is named) that writes one at or after `at`")
    needs_at = True


for kind in (DeployRestart(), KillMidTick(), TerminateBackend(), CrashAfterFirstWrite()):
    registry.add_fault(kind)
