"""A Ctrl-C that lands inside a database round trip: the command still ends as interrupted
(exit 130, its one line), never as "PostgreSQL stopped answering"; the seed's one round trip
is not cut at all (CI's signal sweep once cut it and psycopg reported the server lost)."""

from __future__ import annotations

import signal
import sys

import psycopg
import pytest

from harness import interrupts
from harness.cli import main as cli
from harness.engine.model import scenario, stages
from harness.engine.run import fleet, replica
from harness.infra import owned, rundb, services
from harness.tracks.cron import world


@pytest.fixture
def own_signals():
    saved = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM), sys.unraisablehook
    yield
    interrupts.install()  # forget the interrupt this test made
    signal.signal(signal.SIGINT, saved[0])
    signal.signal(signal.SIGTERM, saved[1])
    sys.unraisablehook = saved[2]
    fleet.STOP.clear()


@pytest.fixture
def stage03_url(pg):
    """A fresh database with stage 03's schema, dropped afterwards."""
    name = f"{services.DB_PREFIX}test_midway_{id(object())}"
    owned.create(pg.url, name)
    url = services.app_url(pg.url, name)
    with psycopg.connect(services.libpq_url(url)) as conn:
        for statement in replica.schema_ddl(stages.resolve("03").path):
            conn.execute(statement)
    yield url
    owned.drop(pg.url, name)


def test_an_error_the_interrupt_caused_still_ends_the_command_as_interrupted(
        own_signals, monkeypatch, capsys):
    def cut(args):  # as psycopg does when Ctrl-C lands while its pipeline is busy
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            raise psycopg.OperationalError("cannot exit pipeline mode while busy") from None
        return 0

    monkeypatch.setitem(cli.COMMANDS, "run", cut)
    monkeypatch.setattr(rundb, "drop_all", list)  # this worker's other tests keep their databases
    assert cli.main(["run", "00"]) == 130
    assert capsys.readouterr().err.splitlines() == [
        "racelab: interrupted; nothing of the run is left"]


def test_a_ctrl_c_during_the_seed_waits_until_the_seed_is_in(own_signals, monkeypatch,
                                                               stage03_url):
    interrupts.install()
    real = world.of_where

    def signalled(*args):  # called inside the seed's pipeline, before its last statements
        signal.raise_signal(signal.SIGINT)
        return real(*args)

    monkeypatch.setattr(world, "of_where", signalled)
    with psycopg.connect(services.libpq_url(stage03_url)) as conn:
        with pytest.raises(KeyboardInterrupt):
            world.seed(conn, scenario.resolve("staggered"))
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    with psycopg.connect(services.libpq_url(stage03_url)) as conn:
        assert conn.execute("SELECT count(*) FROM users").fetchone() == (world.MEMBERS + 1,)
