"""The scenario's faults during one run, each armed with its own state: whether it has acted,
the process a seam fault is armed in, whether an interrupting fault still waits for its
replica's tick. The run's loop (harness.engine.run.fleet) asks this; it keeps no fault state itself.

Fault kinds are one object each, shared by every run going on; what one fault did in one run
lives here, in its `ArmedFault`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from harness.engine.model.faults import FaultKind, kind_of
from harness.engine.model.scenario import Fault

if TYPE_CHECKING:
    from harness.engine.model.scenario import Scenario


@dataclass(eq=False)
class ArmedFault:
    """One of the scenario's faults in one run."""

    fault: Fault
    kind: FaultKind
    applied: bool = False  # it acted (a run whose fault never did warns: `never_applied`)

    def acts_at(self) -> datetime | None:
        return self.kind.acts_at(self.fault)


class RunFaults:
    """Every fault of one run, in the scenario's order."""

    def __init__(self, faults: tuple[Fault, ...]):
        self.all = [ArmedFault(f, kind_of(f)) for f in faults]
        # Seam faults fire once each, in the first process that reaches the seam at or after
        # `at` (on the named replica, if any); one process is armed at a time.
        self._seams = [a for a in self.all if a.kind.arms_seam(a.fault)]
        self._armed: dict[str, ArmedFault] = {}  # process -> the seam fault armed in it
        # Interrupting faults wait for their replica's first tick at or after `at`.
        self._waiting = [a for a in self.all if a.kind.interrupts(a.fault)]

    def acting_at(self, t: datetime) -> list[ArmedFault]:
        """The faults that act from outside the replicas at t."""
        return [a for a in self.all if a.acts_at() == t]

    def acting_times(self) -> set[datetime]:
        return {at for a in self.all if (at := a.acts_at()) is not None}

    # -- seam faults -------------------------------------------------------------------------

    def arm_seam(self, process: str, t: datetime) -> ArmedFault | None:
        """The seam fault to arm in this process's tick at t, if none is armed yet."""
        if self._armed:
            return None
        for a in self._seams:
            if a.fault.replica in (None, process) and t >= a.fault.at:
                self._armed[process] = a
                return a
        return None

    def armed_in(self, process: str) -> ArmedFault | None:
        return self._armed.get(process)

    def fired(self, process: str) -> None:
        """The seam fault armed in the process raised: it has acted, and fires no more."""
        a = self._armed.pop(process)
        self._seams.remove(a)
        a.applied = True

    def disarm(self) -> None:
        """End of an instant: a seam fault that did not fire stays pending for the next
        process."""
        self._armed.clear()

    # -- interrupting faults -----------------------------------------------------------------

    def take_interrupt(self, replica: str, t: datetime) -> ArmedFault | None:
        """The interrupting fault due on the replica's tick at t, if any; it waits no more."""
        for a in self._waiting:
            if a.fault.replica == replica and t >= a.fault.at:
                self._waiting.remove(a)
                return a
        return None

    def wait_again(self, a: ArmedFault) -> None:
        """The fault waits for the replica's next tick (the one at hand opened no
        transaction)."""
        self._waiting.append(a)

    # -- after the run -----------------------------------------------------------------------

    def unapplied(self) -> list[ArmedFault]:
        """The faults that have not acted (yet)."""
        return [a for a in self.all if not a.applied]

    def never_applied(self, s: Scenario) -> list[tuple[Fault, str]]:
        """The faults that never acted, each with why."""
        return [(a.fault, a.kind.why_not_applied(a.fault, s)) for a in self.unapplied()]
