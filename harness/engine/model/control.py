"""The run-control handle: all a fault's hooks may do to a run, and all they see of it.

A fault's `strike` and `interrupt` (harness.engine.model.faults) receive a `RunControl`, never the
loop that plays the run (harness.engine.run.fleet): they act on the replicas by name, add their
ops to the run's history and their lines to its timeline, and reach the track's world; the
loop over instants, the barrier and the pipe protocol stay the loop's own. The loop reads what
an `interrupt` did to the held replica from the handle afterwards (released it, killed it, or
kept its tick held until `resume`); a replica it left held, the loop releases.

A leaf module: it names only protocols and leaves, so a fault kind can depend on it without
reaching back into the engine.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from harness.engine.model.history import Event, F, Type
    from harness.engine.model.scenario import Fault
    from harness.engine.model.world import World


class RunControl(Protocol):
    """What a fault may do to the run it is armed in."""

    world: World  # the track's world: where data and environment faults act
    faults: tuple[Fault, ...]  # the scenario's faults, in its order
    replica_names: tuple[str, ...]  # the long-lived replicas, in letter order
    server: RunServer | None  # the run's own PostgreSQL, where a fault started one
    database: str  # the run database's name

    # -- what it says ------------------------------------------------------------------------

    def emit(self, process: str, type_: Type, f: F, t: datetime, value: dict | None = None
             ) -> None:
        """Add one op to the run's history (a fault's own process is its kind's name)."""
        ...

    def abandon(self, replica: str, t: datetime, value: dict) -> None:
        """The replica died: each interval it left open in the history ends `info`."""
        ...

    def tell(self, event: Event) -> None:
        """Add a line to the run's timeline now."""
        ...

    def note(self, replica: str, event: Event) -> None:
        """Add a line among the replica's own lines of this instant (beside its tick's)."""
        ...

    def note_after(self, replica: str, event: Event) -> None:
        """Add a line among the replica's own lines of this instant, after its tick's end (what
        a fault did once the tick it held had gone on)."""
        ...

    # -- what it does ------------------------------------------------------------------------

    def restart(self, replica: str) -> None:
        """Replace the replica's process by a fresh one (a deploy; the orchestrator after a
        kill)."""
        ...

    def kill(self, replica: str) -> None:
        """SIGKILL the replica's process. A tick it held leaves the instant: it never ends."""
        ...

    def pause(self, replica: str) -> None:
        """SIGSTOP the replica's process: it stands still, holding what it holds."""
        ...

    def keep_held(self, replica: str) -> None:
        """Keep the replica's held tick out of this instant, its transaction open, until
        `resume`; the ticks that block on its locks meanwhile wait with it, and its own later
        ticks are skipped."""
        ...

    def is_kept(self, replica: str) -> bool:
        """Whether the replica's tick is kept held (`keep_held`) and not yet resumed."""
        ...

    def resume(self, replica: str, t: datetime) -> None:
        """SIGCONT a replica kept held and let it go on: it, and the ticks that waited on its
        locks, run to the end of their ticks at t."""
        ...

    def execute(self, statement: str, params: tuple = ()) -> int:
        """Run one statement on the run's database from the harness's own session, committed
        at once (a job of the operator's, such as a cleanup); the rows it changed."""
        ...

    def terminate_backend(self, replica: str) -> int:
        """pg_terminate_backend on the replica's connections; how many backends ended (it
        returns once they are gone)."""
        ...

    def reconnect(self) -> None:
        """The run's server has a new primary behind the same address (a failover): the
        harness's own session to the run's database, which the old primary's death ended,
        opens anew there."""
        ...

    def release(self, replica: str) -> None:
        """Let a replica held before the end of its transaction go on."""
        ...


class RunServer(Protocol):
    """A PostgreSQL server of a run's own, for a fault the shared server cannot stand in for
    (a primary with a streaming standby the fault makes lag): the run makes its database
    there, the harness watches its waits there, and its replicas are told what the server adds
    (a standby's URL) beside DATABASE_URL. A fault kind starts one by `start_server`
    (harness.engine.model.faults); the run closes it at its end, whatever happened."""

    url: str  # its admin URL (postgresql://…/postgres), as services.postgres()'s

    def env(self, database: str) -> dict[str, str]:
        """What every replica and task process is told beyond DATABASE_URL, for the run's
        database `database` (e.g. DATABASE_REPLICA_URL: the same database on the standby)."""
        ...

    def close(self) -> None:
        """Stop what it started and remove its files. Idempotent."""
        ...
