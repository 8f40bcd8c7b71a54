"""Faults on the replicas' OS processes and connections, done through the run's handle.

- deploy-restart: the replica (every replica if none is named) is replaced by a fresh process;
- kill-mid-tick: SIGKILL inside the replica's open transaction; the orchestrator restarts it;
- terminate-backend: pg_terminate_backend on its connection inside the open transaction;
- crash-after-first-write: the job raises right after its first INSERT into a table the track
  names (a seam fault: it declares that statement, the hook in the replica process raises;
  the runner only arms it).
"""

from __future__ import annotations

from datetime import datetime

from harness.engine.model import registry
from harness.engine.model.control import RunControl
from harness.engine.model.faults import Fault, FaultKind, SeamCrash
from harness.engine.model.history import HARNESS, Event, F, Type
from harness.engine.model.scenario import Scenario


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

    def strike(self, f: Fault, run: RunControl, t: datetime) -> list[Event]:
        events = []
        for name in [f.replica] if f.replica else run.replica_names:
            run.emit(f.kind, Type.INVOKE, F.RESTART, t, {"replica": name})
            run.restart(name)
            run.emit(f.kind, Type.OK, F.RESTART, t, {"replica": name})
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

    def interrupt(self, f: Fault, run: RunControl, replica: str, t: datetime) -> None:
        """SIGKILL inside the open transaction; PostgreSQL rolls it back. The orchestrator
        restarts the container: a fresh process takes the replica's place at once."""
        run.emit(f.kind, Type.INVOKE, F.KILL, t, {"replica": replica, "signal": "SIGKILL"})
        run.kill(replica)
        run.emit(f.kind, Type.OK, F.KILL, t, {"replica": replica, "signal": "SIGKILL"})
        run.abandon(replica, t, {"outcome": "unknown", "killed": True})
        run.note(replica, Event(t, replica, "tick", "killed before its transaction ended",
                                "unknown"))
        run.note(replica, Event(t, HARNESS, "fault", f"kill-mid-tick: SIGKILL replica {replica} "
                                                     "while its transaction is open",
                                data={"fault": f.kind, "on": [(replica, "kill")]}))
        run.emit(f.kind, Type.INVOKE, F.RESTART, t, {"replica": replica})
        run.restart(replica)
        run.emit(f.kind, Type.OK, F.RESTART, t, {"replica": replica})


class TerminateBackend(Interrupting):
    name = "terminate-backend"
    summary = ("pg_terminate_backend on the replica's connection inside its first transaction "
               "at or after `at`; its COMMIT fails and the process goes on")

    def interrupt(self, f: Fault, run: RunControl, replica: str, t: datetime) -> None:
        """pg_terminate_backend on the replica's connection inside its open transaction, then
        let the replica go on: its COMMIT meets a dead connection, an outcome it cannot know."""
        run.emit(f.kind, Type.INVOKE, F.TERMINATE, t, {"replica": replica})
        backends = run.terminate_backend(replica)
        run.emit(f.kind, Type.OK, F.TERMINATE, t, {"replica": replica, "backends": backends})
        run.note(replica, Event(
            t, replica, "fault",
            "terminate-backend: connection ended inside the open transaction, which the server "
            "rolls back: none of its writes land"))
        run.release(replica)


class CrashAfterFirstWrite(FaultKind):
    name = "crash-after-first-write"
    where = "seam"
    summary = ("the job raises right after its first write to a table its track names (a "
               "payout row on the cron track), once: in the first process (the named "
               "replica's, if one is named) that writes one at or after `at`")
    needs_at = True

    def seam_crash(self, f: Fault, crash_tables: frozenset[str]) -> SeamCrash:
        """Raise after the first INSERT into a table the track names (SeamRules.crash_tables:
        on the cron track a claim or payout row, or the summary thread)."""
        return SeamCrash(f.kind, "INSERT", crash_tables)


for kind in (DeployRestart(), KillMidTick(), TerminateBackend(), CrashAfterFirstWrite()):
    registry.add_fault(kind)
