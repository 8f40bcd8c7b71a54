"""An asynchronous standby's failover: the run's PostgreSQL is a primary with a hot standby of
its own, reached through one front address (harness.fault_tools.pg_failover). On the named
replica's first transaction at or after `at`, held before its COMMIT:

1. the standby stops receiving WAL (the lab's stand-in for a stream that lags at the wrong
   moment: with asynchronous replication, a commit the primary acknowledged may not have
   reached the standby yet);
2. the replica commits: the primary acknowledges it at once (asynchronous), or waits until
   the standby has applied it (`synchronous_commit = remote_apply`), which it now never can;
3. the primary dies, the standby is promoted and the front address moves to it, as a
   failover tool does; the other replicas are restarted and connect to the new primary (the
   lab's choice: a real one reconnects when its pool finds the old connection dead).

What the old primary had acknowledged and the new one lacks is lost: its payout happened (its
writer saw it committed) and the verdict counts it, marked lost, beside what the new primary
holds. The failover's moment, right after the COMMIT, is the lab's: the worst one.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import psycopg

from harness.engine.model.faults import FaultKind, kind_of
from harness.engine.model.history import HARNESS, Event, F, Type
from harness.errors import UserError
from harness.fault_tools.pg_failover import FailoverPair
from harness.tracks.cron import checker

if TYPE_CHECKING:
    from harness.engine.model.control import RunControl
    from harness.engine.model.scenario import Fault, Scenario
    from harness.engine.model.stages import Stage


class StandbyFailover(FaultKind):
    name = "standby-failover"
    where = "process"
    track = "cron"
    needs_at = True
    needs_replica = True
    waits_for_transaction = True
    records_ops = True
    remote_apply = False
    summary = ("the run's PostgreSQL is a primary with an asynchronous hot standby; at the "
               "replica's first COMMIT at or after `at`, the standby has stopped receiving "
               "WAL, the primary acknowledges the COMMIT and dies, and the standby is promoted "
               "in its place: the other replicas restart on it")

    def start_server(self, s: Scenario) -> FailoverPair:
        return FailoverPair(f"scenario {s.name!r} ({self.name})", self.remote_apply)

    def applies_to(self, stage: Stage) -> bool:
        """Where the replicas' own loop pays: in 05 a task its scheduler starts pays (the
        scheduler's template, harness.schedulers.eventbridge_scheduler), while the fault holds
        a replica's COMMIT."""
        return stage.track == "cron" and not (stage.path / "infra" / "template.json").is_file()

    def check_stage(self, stage: Stage, s: Scenario) -> None:
        if not self.applies_to(stage):
            raise UserError(f"scenario {s.name!r} holds a replica's own COMMIT of the payout; "
                            f"in {stage.path.name} a task its scheduler starts pays (stages 00 "
                            "to 04 pay in their replicas' loop)")
        failovers = [f for f in s.faults if isinstance(kind_of(f), StandbyFailover)]
        if len(failovers) > 1:
            raise UserError(f"scenario {s.name!r} lists {len(failovers)} standby failovers; "
                            "the pair has one standby to promote: one failover a run")
        names = list(s.replica_names)
        for f in failovers:  # another replica's tick at its instants would be held beside it
            mine = s.offsets[names.index(f.replica)]
            if [n for n, off in zip(names, s.offsets, strict=True)
                    if off == mine and n != f.replica]:
                raise UserError(f"scenario {s.name!r}: {f.kind} restarts the other replicas "
                                f"on the new primary while {f.replica}'s tick goes on, so "
                                f"{f.replica} must tick alone: give the others other offsets")

    def interrupts(self, f: Fault) -> bool:
        return True

    def acts_at(self, f: Fault) -> datetime | None:
        return None  # it acts inside the replica's tick, never at an instant of its own

    def interrupt(self, f: Fault, run: RunControl, replica: str, t: datetime) -> bool:
        pair: FailoverPair = run.server
        run.emit(self.name, Type.INVOKE, F.FAULT, t, f.to_json())
        written, replayed = pair.cut_stream()
        waits = " and waits for the standby to apply it" if self.remote_apply else ""
        run.note(replica, Event(
            t, HARNESS, "fault",
            f"{self.name}: the standby stopped receiving WAL at {replayed}; {replica}'s COMMIT "
            f"goes to the primary alone{waits}",
            data={"fault": self.name, "on": [(replica, "stream cut")]}))
        held = pair.open_transactions(run.database, replica)
        run.release(replica)
        waiting = pair.settle(run.database, replica, held)  # acknowledged, or on the standby
        with psycopg.connect(pair.direct_url(run.database), autocommit=True) as conn:
            acknowledged = checker.rows(conn)  # what the primary holds as it dies
        promoted = pair.fail_over()
        with psycopg.connect(pair.direct_url(run.database, standby=True), autocommit=True
                             ) as conn:
            kept = checker.rows(conn)  # what the promoted standby holds, before anyone writes
        lost = acknowledged.written_by(acknowledged.xids() - kept.xids())
        run.world.lose_payouts(lost)
        run.reconnect()
        others = [name for name in run.replica_names if name != replica and not run.is_kept(name)]
        for name in others:
            run.restart(name)
        runs = len(lost.xids())
        run.emit(self.name, Type.OK, F.FAULT, t, {
            **f.to_json(), "standby_replayed_wal": replayed, "primary_wal": written,
            "commit": "waited for the standby" if waiting else "acknowledged",
            "promoted_at_wal": promoted, "lost_transactions": runs, "restarted": others})
        failover = Event(
            t, HARNESS, "fault",
            f"{self.name}: the primary died, the standby was promoted (WAL {promoted}) and "
            f"the front address moved to it: {runs} payout transaction{'s' if runs != 1 else ''}"
            f" the old primary acknowledged {'are' if runs != 1 else 'is'} not on the new one"
            + (f"; {', '.join(others)} restarted on it" if others else ""),
            data={"fault": self.name, "on": [(replica, "failover")]})
        if waiting:  # its COMMIT ends with the primary: the failover comes first
            run.note(replica, failover)
        else:
            run.note_after(replica, failover)
        return True

class StandbyFailoverRemoteApply(StandbyFailover):
    name = "standby-failover-remote-apply"
    remote_apply = True
    summary = ("standby-failover with `synchronous_commit = remote_apply`: the primary "
               "acknowledges a COMMIT only once its standby has applied it")


FAILOVER_FAULTS = (StandbyFailover(), StandbyFailoverRemoteApply())
