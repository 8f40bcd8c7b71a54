"""A step's cost is split into the app's share and the lab's by the time the replica spends in
the lab's hooks: a hook counts, a hold's wait inside it does not, a nested hook counts once.
The clock is a scripted one, so the counts are exact."""

from __future__ import annotations

import itertools

from harness.engine.inside import hook_clock


def test_a_hook_counts_its_time_but_not_the_wait_of_a_hold_inside_it(monkeypatch):
    ticks = itertools.count(1000, 10)  # each reading of the clock is 10 ns after the last
    monkeypatch.setattr(hook_clock.time, "monotonic_ns", lambda: next(ticks))
    clock = hook_clock.HookClock()
    seen = []

    def held(how, own_ns):
        seen.append((how, own_ns))
        for _ in range(100):  # the wait for a release: 1,000 ns that are nobody's hook time
            next(ticks)

    outer = clock.timed(lambda: (clock.timed(lambda: None)(), clock.hold(held, "step")))
    outer()  # reads: enter 1000, hold 1010 (10 counted), after the wait 2020, leave 2030
    assert seen == [("step", 10)]
    assert clock.own_ns == 10  # after the release: from 2020 to 2030


def test_the_count_starts_again_at_each_release(monkeypatch):
    ticks = itertools.count(1000, 10)
    monkeypatch.setattr(hook_clock.time, "monotonic_ns", lambda: next(ticks))
    clock = hook_clock.HookClock()
    seen = []
    clock.timed(lambda: None)()  # 10 ns
    clock.timed(lambda: None)()  # 10 more
    clock.hold(lambda how, own_ns: seen.append(own_ns), "commit")  # outside any hook
    assert (seen, clock.own_ns) == ([20], 0)
