"""Clocks a week off count payouts by the slot their rows name: a slot paid before it fell due
(or after, before the run) is its own finding, never a duplicate, and the verdict's runs equal
the payouts in the database (issue 19, finding 8)."""

from __future__ import annotations

import psycopg
import pytest

from harness.engine.model import scenario, stages
from harness.engine.run import runner
from harness.infra import rundb, services

pytestmark = pytest.mark.xdist_group("skew_slots")


def _run(stage: str, skew: list[str]) -> tuple[runner.RunResult, int]:
    """A run of 2 replicas at 18:00 and 18:01 with this skew, and the payouts (committed
    transactions that credited coins) its database holds."""
    s = scenario.from_dict({
        "name": "skewed", "replicas": 2, "start": "2026-05-29T18:00:00-06:00",
        "end": "2026-05-29T18:15:00-06:00", "offsets": ["0s", "1m"], "skew": skew})
    pg = services.postgres()
    result = runner.run(stages.resolve(stage), s, keep=True)
    try:
        url = services.libpq_url(services.app_url(pg.url, result.database))
        with psycopg.connect(url) as conn:
            payouts = conn.execute("SELECT count(DISTINCT xmin::text) FROM token_transactions "
                                   "WHERE reason LIKE 'leaderboard_close %'").fetchone()[0]
    finally:
        rundb.discard(pg.url, result.database)
    return result, payouts


def _slots(result: runner.RunResult) -> list[tuple]:
    return [(s.key, s.expected, s.runs, s.duplicates, s.missed, s.paid)
            for s in result.verdict.slots]


def test_a_clock_a_week_ahead_pays_next_week_early_not_twice(pg):
    """+7d on 03: A pays 2026-W23 early, B pays W22; two payouts, no duplicate."""
    result, payouts = _run("03", ["+7d", "0s"])
    assert _slots(result) == [("2026-W22", 1, 1, 0, 0, ""), ("2026-W23", 0, 1, 0, 0, "early")]
    v = result.verdict
    assert (v.runs, v.duplicates, v.missed, payouts) == (2, 0, 0, 2)
    tick = next(e for e in result.events if e.replica == "A" and e.event == "tick")
    assert tick.detail == "its clock reads 2026-06-05 18:00:00"


def test_two_clocks_a_week_behind_pay_last_week_late_once(pg):
    """-7d on both, 03: A pays 2026-W21 late, B finds its claim; W22 missed; one payout."""
    result, payouts = _run("03", ["-7d", "-7d"])
    assert _slots(result) == [("2026-W22", 1, 0, 0, 1, ""), ("2026-W21", 0, 1, 0, 0, "late")]
    v = result.verdict
    assert (v.runs, v.duplicates, v.missed, payouts) == (1, 0, 1, 1)
    assert result.to_json()["slots"][1]["paid"] == "late"


@pytest.mark.parametrize(("stage", "runs"), [("00", 2), ("03", 1)])
def test_a_skew_inside_the_week_counts_in_its_own_slot(pg, stage, runs):
    """+5m on A keeps it in W22: 00 pays twice (one duplicate), 03 once; runs = payouts."""
    result, payouts = _run(stage, ["+5m", "0s"])
    assert _slots(result) == [("2026-W22", 1, runs, runs - 1, 0, "")]
    assert payouts == result.verdict.runs == runs
    tick = next(e for e in result.events if e.replica == "A" and e.event == "tick")
    assert tick.detail == "its clock reads 18:05:00"
