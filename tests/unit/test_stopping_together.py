"""Runs side by side in threads stop together on one flag (fleet.STOP); once they are over the
flag is lowered again, unless Ctrl-C raised it: a run made after them in the same process plays."""

from __future__ import annotations

import signal

import pytest

from harness import interrupts
from harness.engine.run import fleet


def test_a_failure_stops_the_others_and_the_flag_is_lowered_once_they_are_over(own_signals):
    interrupts.install(fleet.STOP.set)
    with pytest.raises(RuntimeError), fleet.stopping_together():
        fleet.STOP.set()  # one run failed: the others stop at their next instant
        raise RuntimeError("a worker's error")
    assert not fleet.STOP.is_set()


def test_after_ctrl_c_the_flag_stays_up(own_signals):
    interrupts.install(fleet.STOP.set)
    with pytest.raises(KeyboardInterrupt), fleet.stopping_together():
        signal.raise_signal(signal.SIGINT)
    assert fleet.STOP.is_set()


def test_the_flag_left_up_by_an_earlier_command_is_lowered_as_runs_begin(own_signals):
    fleet.STOP.set()
    with fleet.stopping_together():
        assert not fleet.STOP.is_set()


def test_a_ctrl_c_a_finaliser_swallowed_before_runs_begin_stops_them_before_they_start(
        own_signals):
    interrupts.install(fleet.STOP.set)
    try:
        signal.raise_signal(signal.SIGINT)
    except KeyboardInterrupt:
        pass  # as a finaliser would have lost it
    with pytest.raises(KeyboardInterrupt), fleet.stopping_together():
        pytest.fail("the runs began after Ctrl-C")
