"""A replica told to stop while the harness holds its tick (an interrupt, a deploy restart of a
replica whose transaction a fault keeps open): the hold lets go, the tick runs to its end and
the process exits on its own, as at a Stop between ticks; before, it finished its tick and then
waited for a message that never came until the harness killed it five seconds later."""

from __future__ import annotations

from datetime import datetime

from harness.engine.inside.messages import Done, Held, Tick
from harness.engine.model import stages
from harness.engine.model.history import F, Type
from harness.engine.model.scenario import TZ
from harness.engine.run import runner
from harness.engine.run.replica import Replica
from harness.infra import rundb, services

MONDAY_NOON = datetime(2026, 6, 1, 12, 0, tzinfo=TZ)  # nothing due: the tick only tidies


def _told_to_stop_at_its_first_hold(tick: Tick) -> Done:
    """A real 03 replica sent `tick`, told to stop at its first hold: the Done it sends (it
    must exit by itself, exit code 0, not by stop()'s SIGKILL, -9)."""
    stage = stages.resolve("03")
    admin = services.postgres().url
    db = rundb.acquire(admin, runner.ddl_of(stage))
    r = Replica("A", stage.path, {"DATABASE_URL": services.app_url(admin, db),
                                  "DB_POOL_SIZE": "1", "PGAPPNAME": "racelab:stop-test:A",
                                  "REPLICA": "A"})
    try:
        r.start()
        r.send(tick)
        held = r.recv(30)
        assert isinstance(held, Held), held
        r.tell_to_stop()
        done = r.recv(30)
        assert isinstance(done, Done) and done.outcome == "ok", done
        r.proc.join(30)
        assert r.proc.exitcode == 0
        return done
    finally:
        r.stop()
        rundb.discard(admin, db)


def test_a_replica_told_to_stop_while_held_ends_its_tick_and_exits_on_its_own(pg):
    """Held before its COMMIT, as every same-instant tick is."""
    _told_to_stop_at_its_first_hold(Tick(MONDAY_NOON.isoformat(), hold=True))


def test_in_step_mode_no_later_statement_waits_and_no_op_is_lost(pg):
    """Held before its first statement in step mode: the statements after it run without a
    hold (else a Held would come instead of the Done), and the ops those holds would have
    carried reach the harness in the Done: the advisory lock taken, the COMMIT."""
    done = _told_to_stop_at_its_first_hold(Tick(MONDAY_NOON.isoformat(), hold=False, step=True))
    ops = {(op[1], op[2]) for op in done.ops}
    assert (Type.OK.value, F.LOCK.value) in ops and (Type.INVOKE.value, F.COMMIT.value) in ops
