"""Every visit counted, whichever replica handles it, however their statements interleave."""


def test_two_visits_at_once_count_two(racelab):
    found = racelab.explore(preemptions=1)
    assert found.bad == []
