"""pause: the replica stands still (SIGSTOP) inside its first transaction at or after `at` (a
tick that opens none leaves the pause for the replica's next) for PAUSE of virtual time, then
goes on (SIGCONT): a long GC pause, a frozen container, a laptop lid. Whatever it holds stays
held: a row lock blocks the others until it resumes; a lock with a TTL runs out while it stands
still (the track's world moves such TTLs with the virtual clock), and the resumed process goes
on believing it still holds it.

It strikes at the transaction's end, before COMMIT, after every check and write of the tick; the
detours track's `pause-at-begin` (harness.tracks.detours.faults) strikes at its start instead.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from harness.engine.model import registry
from harness.engine.model.control import RunControl
from harness.engine.model.faults import Fault, FaultKind
from harness.engine.model.history import HARNESS, Event, F, Type
from harness.engine.model.scenario import format_duration

PAUSE = timedelta(minutes=5)  # longer than any lock TTL in the lab (rq-scheduler's is 70 s)


class Pause(FaultKind):
    name = "pause"
    summary = (f"SIGSTOP the replica inside its first transaction at or after `at`; SIGCONT "
               f"{format_duration(PAUSE)} of virtual time later")
    needs_at = True
    needs_replica = True
    waits_for_transaction = True
    records_ops = True
    where_in_tick = "while its transaction is open"

    def interrupts(self, f: Fault) -> bool:
        return True

    def interrupt(self, f: Fault, run: RunControl, replica: str, t: datetime) -> bool:
        if t >= self.acts_at(f):  # its first transaction came after the pause
            run.release(replica)
            return False
        run.emit(f.kind, Type.INVOKE, F.PAUSE, t, {"replica": replica})
        run.pause(replica)
        run.emit(f.kind, Type.OK, F.PAUSE, t, {"replica": replica,
                                               "until": self.acts_at(f).isoformat()})
        run.keep_held(replica)
        run.note(replica, Event(
            t, HARNESS, "fault", f"{f.kind}: SIGSTOP replica {replica} {self.where_in_tick}, "
            f"until {self.acts_at(f):%H:%M:%S}",
            data={"fault": f.kind, "on": [(replica, "pause")]}))

    def acts_at(self, f: Fault) -> datetime | None:
        return f.at + PAUSE if f.at else None

    def strike(self, f: Fault, run: RunControl, t: datetime) -> list[Event]:
        """Resume the replica (if the pause caught it in a transaction) and let it finish."""
        if not run.is_kept(f.replica):
            run.emit(f.kind, Type.INFO, F.PAUSE, t, {"replica": f.replica, "paused": False})
            return [Event(t, HARNESS, "fault", f"{f.kind}: replica {f.replica} opened no "
                          f"transaction from {f.at:%H:%M:%S} to {t:%H:%M:%S}; not paused",
                          data={"fault": f.kind, "on": [(f.replica, "none")]})]
        run.tell(Event(t, HARNESS, "fault", f"{f.kind}: SIGCONT replica {f.replica}",
                       data={"fault": f.kind, "on": [(f.replica, "resume")]}))
        run.emit(f.kind, Type.INVOKE, F.RESUME, t, {"replica": f.replica})
        run.resume(f.replica, t)
        run.emit(f.kind, Type.OK, F.RESUME, t, {"replica": f.replica})
        return []


registry.add_fault(Pause())
