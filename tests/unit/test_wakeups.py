"""The replicas' own loop also ticks a replica where a library in it asked to be woken."""

from __future__ import annotations

from datetime import timedelta

from harness.engine.model import scenario
from harness.engine.model.schedulers import ReplicaLoop


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


def test_ticks_woken_for_one_instant_are_dispatched_by_replica_name_not_by_who_asked_first():
    """Wakeups arrive in the order the replicas' last ticks happened to end in (racing, when
    they ended together): C asking before B must not put C first at the instant they share."""
    s = scenario.resolve("staggered", "cron")
    loop = ReplicaLoop(s)
    first = min(loop.times())
    ticks = {k.replica: k for k in loop._ticks[first]}
    at = first + timedelta(minutes=5)
    for name in ("C", "B"):  # C's wakeup arrives first
        tick = ticks.get(name) or next(k for t in loop.times() for k in loop._ticks[t]
                                       if k.replica == name)
        loop.wake(tick, at + (tick.now - tick.t))
    starts, _ = loop.due(at)
    assert [k.replica for k in starts] == ["B", "C"]
