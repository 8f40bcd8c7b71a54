"""The detours track's own faults: a Redis failover while a replica is inside its transaction,
and a pause before the transaction's first statement.

failover-while-held: the first transaction of the replica at or after `at` stays open HOLD of
virtual time (a slow payout: a provider call, a long query), and while it is open the Redis
replica, whose link has been down since the run began, is promoted and the app re-pointed at
it. The lock the replica took before its transaction was written on the old primary only; the
replicas that tick while it is still open meet a Redis that never saw it.

pause-at-begin: the pause fault (harness.faults.pause) struck as the transaction begins, before
its first statement, rather than before its COMMIT: the replica has taken whatever it takes
before its transaction (a Redis lock, a fencing token) and checked nothing yet. The case a
fencing token is built for: its check comes after the pause. Only this track's apps are sure to
hold there (a peer library's critical call would take the hold instead).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from harness.engine.model.control import RunControl
from harness.engine.model.faults import Fault, FaultKind, HoldAt
from harness.engine.model.history import HARNESS, Event, F, Type
from harness.engine.model.scenario import Scenario, format_duration
from harness.engine.model.stages import Stage
from harness.errors import UserError
from harness.faults.pause import PAUSE, Pause

HOLD = timedelta(seconds=45)  # shorter than the Redis lock's 60 s: the lock alone would hold


class FailoverWhileHeld(FaultKind):
    name = "failover-while-held"
    summary = (f"the replica's first transaction at or after `at` stays open "
               f"{format_duration(HOLD)}; meanwhile the Redis replica, cut off since the start, "
               f"is promoted and the app re-pointed at it")
    track = "detours"
    needs = ("pair",)  # the world starts a primary/replica pair for it
    needs_at = True
    needs_replica = True
    waits_for_transaction = True
    records_ops = True  # from the promotion, when the replica holds, to its transaction's end

    def applies_to(self, stage: Stage) -> bool:
        """A detour whose app talks to Redis: a failover means nothing to one that does not."""
        return any("REDIS_URL" in p.read_text() for p in (stage.path / "myapp").rglob("*.py"))

    def check_stage(self, stage: Stage, s: Scenario) -> None:
        if not self.applies_to(stage):
            raise UserError(f"{self.name} fails Redis over; {stage.path.name}'s app does not "
                            f"use Redis")

    def interrupts(self, f: Fault) -> bool:
        return True

    def interrupt(self, f: Fault, run: RunControl, replica: str, t: datetime) -> bool:
        if t >= self.acts_at(f):  # its first transaction came too late
            run.release(replica)
            return False
        run.keep_held(replica)
        lost = run.world.fail_over()
        run.emit(f.kind, Type.INVOKE, F.FAULT, t, {**f.to_json(), "promoted": True,
                                                    "lost": list(lost)})
        run.note(replica, Event(
            t, HARNESS, "fault", f"failover-while-held: {replica}'s transaction stays open "
            f"until {self.acts_at(f):%H:%M:%S}; the Redis replica is promoted and the app "
            f"re-pointed at it; lost on the way: {', '.join(lost) or 'nothing'}"))
        return True

    def acts_at(self, f: Fault) -> datetime | None:
        return f.at + HOLD if f.at else None

    def strike(self, f: Fault, run: RunControl, t: datetime) -> list[Event]:
        """Let the held replica commit (if the fault caught it in a transaction)."""
        if not run.is_kept(f.replica):
            run.emit(f.kind, Type.INFO, F.FAULT, t, {**f.to_json(), "promoted": False})
            return [Event(t, HARNESS, "fault", f"failover-while-held: replica {f.replica} "
                          f"opened no transaction from {f.at:%H:%M:%S} to {t:%H:%M:%S}")]
        run.tell(Event(t, HARNESS, "fault",
                       f"failover-while-held: {f.replica}'s transaction goes on"))
        run.resume(f.replica, t)
        run.emit(f.kind, Type.OK, F.FAULT, t, f.to_json())
        return []


class PauseAtBegin(Pause):
    name = "pause-at-begin"
    summary = (f"SIGSTOP the replica as its first transaction at or after `at` begins, before its "
               f"first statement; SIGCONT {format_duration(PAUSE)} of virtual time later")
    track = "detours"
    hold_at = HoldAt(early=True)
    where_in_tick = "as its transaction begins, before its first statement"


KINDS = (FailoverWhileHeld(), PauseAtBegin())
