"""A Ctrl-C that lands inside a database round trip: the command still ends as interrupted
(exit 130, its one line), never as "PostgreSQL stopped answering" (CI's signal sweep once cut
the seed's pipeline as it ended, and psycopg raised an OperationalError from the interrupt)."""

from __future__ import annotations

import signal
import threading

import psycopg
import pytest

from harness import interrupts
from harness.cli import main as cli
from harness.infra import rundb


def test_an_error_the_interrupt_caused_still_ends_the_command_as_interrupted(
        own_signals, monkeypatch, capsys):
    def cut(args):  # as psycopg does when Ctrl-C lands while its pipeline is busy
        try:
            signal.raise_signal(signal.SIGINT)
        finally:  # psycopg's Pipeline._exit raises it in a `finally` as the interrupt unwinds
            raise psycopg.OperationalError("cannot exit pipeline mode while busy")

    monkeypatch.setitem(cli.COMMANDS, "run", cut)
    monkeypatch.setattr(rundb, "drop_all", list)  # this worker's other tests keep their databases
    assert cli.main(["run", "00"]) == 130
    assert capsys.readouterr().err.splitlines() == [
        "racelab: interrupted; nothing of the run is left"]


def test_an_error_the_interrupt_did_not_cause_is_still_said(own_signals, monkeypatch, capsys):
    """A server that went away on its own after Ctrl-C: its line, not "interrupted"."""
    def lost(args):
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass  # as a finaliser would have lost it
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setitem(cli.COMMANDS, "run", lost)
    assert cli.main(["run", "00"]) == 2
    assert "PostgreSQL stopped answering while the command ran (server closed the connection " \
           "unexpectedly)" in capsys.readouterr().err


def test_a_worker_thread_leaving_its_shield_leaves_the_main_threads_interrupt_to_it(own_signals):
    """Ctrl-C inside the main thread's shielded section waits for that section's end, even when
    a worker thread (a matrix cell making its database) leaves a shielded section of its own
    meanwhile: the worker does not raise it, and so does not take it from the main thread."""
    interrupts.install()
    raised_in_worker = []

    def worker():
        try:
            with interrupts.shielded():
                pass
        except KeyboardInterrupt:
            raised_in_worker.append(True)

    with pytest.raises(KeyboardInterrupt), interrupts.shielded():
        signal.raise_signal(signal.SIGINT)  # waits: the main thread is shielded
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
    assert raised_in_worker == []
