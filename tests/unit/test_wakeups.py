"""The replicas' own loop also ticks a replica where a library in it asked to be woken."""

from __future__ import annotations

from datetime import timedelta

from harness.engine.model import scenario
from harness.engine.model.schedulers import ReplicaLoop
from harness.engine.run.fleet import Agenda


def test_a_replica_ticks_where_its_library_asked_on_its_own_clock_once_and_within_the_run():
    s = scenario.resolve("clock-skew", "cron")  # B's clock runs 40 s fast
    loop = ReplicaLoop(s)

    def b_ticks():
        return sorted((k.t, k.now) for t in loop.times() for k in loop._ticks[t]
                      if k.replica == "B")

    before = b_ticks()
    assert sorted(loop.added()) == sorted(loop.times())  # the first call: every time
    first_b = before[0][0]
    (tick,) = [k for k in loop._ticks[first_b] if k.replica == "B"]
    asked = tick.now + timedelta(seconds=90)
    loop.wake(tick, asked)
    loop.wake(tick, asked)  # asked twice: one tick
    loop.wake(tick, tick.now)  # not later than the tick that asked: nothing
    loop.wake(tick, s.end + timedelta(days=7))  # after the run: nothing
    assert sorted(set(b_ticks()) - set(before)) == [(tick.t + timedelta(seconds=90), asked)]
    assert len(b_ticks()) == len(before) + 1
    known = loop.times()
    loop.added()
    loop.wake(tick, tick.now + timedelta(seconds=7))  # an instant nobody ticks at yet
    loop.wake(tick, tick.now + timedelta(seconds=90))  # one the run knows now
    assert tick.t + timedelta(seconds=7) not in known
    assert loop.added() == [tick.t + timedelta(seconds=7)]  # the run's agenda learns it
    assert loop.added() == []


def test_the_agenda_gives_each_time_once_earliest_first_and_none_before_the_last_taken():
    """Fleet.play's instants: a scheduler without `added` gives all its times after each
    instant; each joins once, and a time not later than the instant just played is left out."""
    t0 = scenario.resolve("staggered", "cron").start
    at = [t0 + timedelta(minutes=m) for m in range(5)]
    agenda = Agenda([at[3], at[1]])
    agenda.add([at[1], at[2], at[3]])
    assert agenda.next() == at[1]
    agenda.add([at[0], at[1], at[2], at[4]])  # at[0] and at[1] are past
    assert [agenda.next() for _ in range(3)] == at[2:]
    assert not agenda


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
