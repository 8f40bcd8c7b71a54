"""A wait is worded as what it is on, and whose (issue 41, item 7): stage 00 takes no lock, so
its replicas never 'wait for another replica's lock'."""

from __future__ import annotations

import pytest

from harness.engine.model.history import F
from harness.engine.run import cells, waits
from tests.helpers import copy_stage_edited, left_by, one_line_exit_2, racelab_pid, run


def test_a_wait_names_what_it_is_on_and_whose():
    assert waits.words("advisory", ["A"]) == "waits for an advisory lock replica A holds"
    assert waits.words("transactionid", ["C"]) == (
        "waits for replica C's open transaction to end (a row it wrote or locked)")
    assert waits.words("tuple", ["A"]) == "waits for a row replica A holds"
    assert waits.words("", []) == "waits for a lock (unknown) another session holds"


def test_stage_00_waits_on_rows_and_transactions_never_on_a_lock(pg):
    """Under simultaneous, 00's replicas queue on the one zombie thread's row: each blocked line
    names the transaction or row it waits for and the replica that has it; no op is a lock."""
    result = run("00", "simultaneous")
    blocked = [e.detail for e in result.events if e.event == "blocked"]
    assert blocked and all(b.startswith(("waits for replica", "waits for a row replica"))
                           for b in blocked), blocked
    assert not any("lock" in b.split("(")[0] for b in blocked)
    ops = [op for op in result.history.ops if op.f.value == "block"]
    assert ops and all(op.value["on"] for op in ops)


def test_a_session_lock_kept_past_its_tick_is_named_not_waited_out(pg, tmp_path):
    """Exercise 01 answered with a blocking session-level lock: B waits for A's lock, A's tick
    has ended and keeps it. One line saying so, exit 2, and nothing of the run left (issue 41,
    item 3: before, 60 s of waiting; before that, an internal error)."""
    folder = copy_stage_edited(tmp_path, "01-mine", "worker.py",
                               "SELECT pg_try_advisory_xact_lock(:key)",
                               "SELECT pg_advisory_lock(:key) IS NOT NULL",
                               stage="01-advisory-lock")
    out, pid = racelab_pid("run", str(folder), "--scenario", "staggered")
    one_line_exit_2(out, "replica B waits for an advisory lock replica A holds",
                    "the tick of A has ended", "pg_advisory_unlock")
    assert left_by(pid, pg.url) == []


@pytest.mark.slow
@pytest.mark.parametrize("track", ["cron", "alerts", "detours"])
def test_no_worded_wait_in_any_cell_names_a_lock_its_stage_does_not_take(pg, track):
    """Every stage × canonical scenario of the track (issue 41's acceptance): each `blocked`
    line says what it waits for; one that names a lock (before its parenthesis: "a row it
    wrote or locked" is a transaction) comes from a run in which a replica took a PostgreSQL
    advisory lock (a LOCK op that is not a Redis lock's). Before, 00's waits read "waits for
    another replica's lock" in a stage that takes none."""
    wrong, seen = [], 0
    for result in cells.run_all(cells.of(track)):
        takes_lock = any(op.f is F.LOCK and not op.value.get("redis")
                         for op in result.history.ops)
        for e in result.events:
            if e.event != "blocked":
                continue
            seen += 1
            if not e.detail.startswith("waits for") or (
                    "lock" in e.detail.split("(")[0] and not takes_lock):
                wrong.append((result.stage.name, result.scenario.name, e.detail))
    assert wrong == []
    assert seen or track == "alerts"  # the cron and detours matrices wait somewhere
