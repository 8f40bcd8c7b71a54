"""The replicas' own loop also ticks a replica where a library in it asked to be woken."""

from __future__ import annotations

from datetime import timedelta

from harness.engine import scenario
from harness.engine.schedulers import ReplicaLoop


def test_a_replica_ticks_where_its_library_asked_on_its_own_clock_once_and_within_the_run():
    s = scenario.resolve("clock-skew", "cron")  # B's clock runs 40 s fast
    loop = ReplicaLoop(s)

    def b_ticks():
        return sorted((k.t, k.now) for t in loop.times() for k in loop._ticks[t]
                      if k.replica == "B")

    before = b_ticks()
    first_b = before[0][0]
    (tick,) = [k for k in loop._ticks[first_b] if k.replica == "B"]
    asked = tick.now + timedelta(seconds=90)
    loop.wake(tick, asked)
    loop.wake(tick, asked)  # asked twice: one tick
    loop.wake(tick, tick.now)  # not later than the tick that asked: nothing
    loop.wake(tick, s.end + timedelta(days=7))  # after the run: nothing
    assert sorted(set(b_ticks()) - set(before)) == [(tick.t + timedelta(seconds=90), asked)]
    assert len(b_ticks()) == len(before) + 1
