"""Redelivery on a visibility timeout (issue 40, part 2): the Celery peers with late
acknowledgement and a 30 s visibility timeout (§), and A's payout task standing still inside its
transaction from 18:00 to 18:05. kombu's restore sweep puts A's unacknowledged message back in
the queue and another replica's worker runs it while A still holds it. Counted from the
database, as every cell; the README's peers matrix and docs/field-faults.md say these numbers."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.engine.model import scenario as scenarios
from harness.engine.model import stages
from harness.engine.run import cells
from harness.engine.views import tables
from harness.errors import UserError
from harness.tracks.peers import redelivery
from tests.helpers import one_line_exit_2, racelab, run

NAME = "visibility-redelivery"
AGAIN = "info: leaderboard_close: this message was delivered before and not acknowledged"


def _logs(result, replica: str, hm: str) -> list[str]:
    return [e.detail for e in result.events
            if e.replica == replica and f"{e.t:%H:%M}" == hm and e.event == "log"]


def _paid(result) -> list[tuple[str, str]]:
    """(replica, HH:MM) of each tick that wrote coin credits."""
    return [(e.replica, f"{e.t:%H:%M}") for e in result.events
            if e.event == "write" and "token_transactions" in e.detail]


def test_celery_late_ack_redelivers_a_task_that_outlasts_its_visibility_timeout(pg):
    """05: one beat sends, A's worker holds the message past the timeout, B's worker takes it
    back at 18:01 and pays; A commits at 18:05: 2. 04: every beat sends, and B pays A's again:
    4. 06: the claim row beneath: B's and C's redeliveries (one per timeout) find the week
    claimed once A commits: 1."""
    redbeat = run("peers-05", NAME)
    assert (redbeat.verdict.runs, redbeat.verdict.duplicates) == (2, 1)
    assert AGAIN in _logs(redbeat, "B", "18:01")
    assert _paid(redbeat) == [("B", "18:01"), ("A", "18:05")]

    beat = run("peers-04", NAME)
    assert (beat.verdict.runs, beat.verdict.duplicates) == (4, 3)
    assert sorted(_paid(beat)) == [("A", "18:05"), ("B", "18:00"), ("B", "18:01"),
                                   ("C", "18:00")]

    claimed = run("peers-06", NAME)
    assert (claimed.verdict.runs, claimed.verdict.duplicates, claimed.verdict.missed) == (1, 0, 0)
    again = [e.replica for e in claimed.events if e.detail == AGAIN]
    assert again == ["B", "C"]  # the task ran three times
    assert [(e.replica, e.detail) for e in claimed.events if e.event == "claim"] == [
        ("A", "true"), ("B", "false"), ("C", "false")]
    assert _paid(claimed) == [("A", "18:05")]


def test_without_the_timeout_the_slow_task_is_delivered_once(pg):
    """The same runs with the app's defaults (early acknowledgement, kombu's hour): A's task is
    as slow, nobody takes its message back; RedBeat pays once, beat in every replica 3 (each
    beat's own send). The [world] table is what turns the redelivery on."""
    plain = replace(scenarios.resolve(NAME, "peers"), world=())
    for stage, runs in (("peers-05", 1), ("peers-04", 3)):
        result = cells.run_cell(stages.resolve(stage), plain)
        assert result.verdict.runs == runs, stage
        assert [e for e in result.events if e.detail == AGAIN] == [], stage
        assert ("A", "18:05") in _paid(result), stage


def test_the_cells_carry_the_lab_s_chosen_times(pg):
    """The README's cells, marks included: the timeout and the task's length are the lab's."""
    for stage, want in (("peers-04", "4 §"), ("peers-05", "2 §"), ("peers-06", "1")):
        assert tables.marked_cell(run(stage, NAME)).plain == want, stage


def test_the_scenario_means_nothing_for_a_peer_not_on_celery():
    """APScheduler, procrastinate and rq-scheduler: "—" in the matrix, one line and exit 2 when
    asked for."""
    kind = redelivery.SlowTask()
    sc = scenarios.resolve(NAME, "peers")
    for name in ("peers-01", "peers-02", "peers-03"):
        st = stages.resolve(name)
        assert not kind.applies_to(st)
        with pytest.raises(UserError, match="does not run on Celery"):
            kind.check_stage(st, sc)
    assert all(kind.applies_to(stages.resolve(n)) for n in ("peers-04", "peers-05", "peers-06"))
    one_line_exit_2(racelab("run", "peers-01", "--scenario", NAME), "does not run on Celery")


@pytest.mark.parametrize(("value", "why"), [
    ('"0s"', "at least 1s"), ('"1500ms"', "is not a duration"), ('"1.5s"', "whole number"),
    ('["30s", "60s"]', "one value"), ('"soon"', "is not a duration")])
def test_a_timeout_no_run_can_use_is_one_line(tmp_path, value, why):
    path = tmp_path / "s.toml"
    path.write_text(f"""name = "mine"
track = "peers"
replicas = 3
interval = "15m"
start = "2026-05-29T17:45:00-06:00"
end = "2026-05-29T18:15:00-06:00"

[world]
visibility_timeout = {value}
""")
    out = racelab("run", "peers-05", "--scenario", str(path))
    one_line_exit_2(out, "world.visibility_timeout", why)


def test_the_world_reaches_the_app_as_its_two_settings():
    sc = scenarios.resolve(NAME, "peers")
    assert redelivery.env(sc) == {"CELERY_ACKS_LATE": "1", "CELERY_VISIBILITY_TIMEOUT": "30"}
    assert redelivery.env(replace(sc, world=())) == {}
