"""The digest under racelab: every day one digest, whichever replicas' schedulers fire."""

import pytest


def test_no_schedule_of_two_replicas_writes_a_second_digest(racelab):
    found = racelab.explore(preemptions=1)
    assert found.bad == []


@pytest.mark.racelab_scenarios()
def test_every_day_gets_one_digest(racelab, racelab_scenario):
    run = racelab.run()
    assert run.duplicates == 0 and run.missed == 0
