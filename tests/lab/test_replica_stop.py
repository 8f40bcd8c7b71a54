"""A replica told to stop while the harness holds its tick (an interrupt, a deploy restart of a
replica whose transaction a fault keeps open): the hold lets go, the tick runs to its end and
the process exits on its own, as at a Stop between ticks; before, it finished its tick and then
waited for a message that never came until the harness killed it five seconds later."""

from __future__ import annotations

from datetime import datetime

from harness.engine import runner, stages
from harness.engine.messages import Done, Held, Tick
from harness.engine.replica import Replica
from harness.engine.scenario import TZ
from harness.infra import rundb, services

MONDAY_NOON = datetime(2026, 6, 1, 12, 0, tzinfo=TZ)  # nothing due: the tick only tidies


def test_a_replica_told_to_stop_while_held_ends_its_tick_and_exits_on_its_own(pg):
    stage = stages.resolve("03")
    admin = services.postgres().url
    db = rundb.acquire(admin, runner.ddl_of(stage))
    r = Replica("A", stage.path, {"DATABASE_URL": services.app_url(admin, db),
                                  "DB_POOL_SIZE": "1", "PGAPPNAME": "racelab:stop-test:A",
                                  "REPLICA": "A"})
    try:
        r.start()
        r.send(Tick(MONDAY_NOON.isoformat(), hold=True))
        held = r.recv(30)
        assert isinstance(held, Held) and held.how == "commit", held
        r.tell_to_stop()
        done = r.recv(30)
        assert isinstance(done, Done) and done.outcome == "ok", done
        r.proc.join(30)
        assert r.proc.exitcode == 0  # ended by itself, not by stop()'s SIGKILL (-9)
    finally:
        r.stop()
        rundb.discard(admin, db)
