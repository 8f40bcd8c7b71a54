"""docs/racelab.schema.json: a valid JSON Schema that tells a good output from a bad one. The
CLI's real outputs are checked against it by every test that reads them (tests/helpers.py)."""

from __future__ import annotations

import copy

import jsonschema
import pytest

from harness.engine.model.history import F, Type
from tests.helpers import schema_validator

RUN = {
    "stage": "01-advisory-lock", "track": "cron", "scenario": "staggered", "seed": 7,
    "replicas": 2, "offsets": {"A": "0s", "B": "1m"},
    "slots": [{"job": "leaderboard_close", "key": "2026-W22", "expected": 1, "runs": 2,
               "duplicates": 1, "missed": 0, "partial": 0,
               "received": {"notifications": {"landed": 6, "expected": 3},
                            "coins": {"landed": 60, "expected": 30},
                            "threads": {"landed": 2, "expected": 1}}}],
    "runs": 2, "expected": 1, "duplicates": 1, "missed": 0, "partial": 0,
    "aborted": 0, "aborted_not_retried": 0, "settings": {"isolation": "read-committed"},
    "coins": {"expected": 30, "paid": 60},
    "faults": [{"kind": "terminate-backend", "replica": "A", "at": "2026-05-29T18:07:00-06:00",
                "applied": False, "why_not_applied": "no tick of replica A …"}],
    "marks": [{"mark": "§", "assumes": "chosen", "why": "the pause the lab chose …"}],
    "events": [{"t": "2026-05-29T18:00:00-06:00", "replica": "A", "event": "write",
                "detail": "3 token_transactions, 1 threads (updated)",
                "writes": [{"table": "token_transactions", "rows": 3, "updated": False},
                           {"table": "threads", "rows": 1, "updated": True}]}],
    "history": [
        {"index": 0, "process": "A", "type": "invoke", "f": "lock",
         "t": "2026-05-29T18:00:00-06:00", "value": {"xact": True}},
        {"index": 1, "process": "A", "type": "ok", "f": "lock", "t": "2026-05-29T18:00:00-06:00",
         "value": {"xact": True, "result": True}},
        {"index": 2, "process": "A", "type": "ok", "f": "commit", "t": "2026-05-29T18:00:00-06:00",
         "value": {}},
    ],
    "states": [{"after": 2, "t": "2026-05-29T18:00:00-06:00",
                "value": {"coins_paid": 30, "credit_rows": 3, "claim_rows": None, "threads": 1}}],
    "duration_s": 1.2,
}


def test_a_run_as_documented_validates_and_a_matrix_is_a_list_of_runs_without_events():
    schema_validator().validate(RUN)
    cell = {k: v for k, v in RUN.items() if k not in ("events", "history", "states")}
    schema_validator().validate([cell, cell])


@pytest.mark.parametrize("break_it", [
    lambda d: d["slots"][0].update(partial=False),  # partial is a count everywhere
    lambda d: d["slots"][0]["received"].pop("coins"),  # every consumer is counted
    lambda d: d["events"][0]["writes"][0].update(rows="3"),
    lambda d: d["faults"][0].pop("applied"),
    lambda d: d.update(offsets={"A@18:00": "0s"}),  # a replica is its letter
    lambda d: d.update(colour="red"),  # no key the schema does not document
    lambda d: d.pop("coins"),  # a cron run has coins
    lambda d: d["marks"][0].update(mark="*"),  # a mark is one the legend knows
    lambda d: d.pop("marks"),  # every run says what it assumed, [] for nothing
    lambda d: d["history"][0].update(f="locked"),  # an op's f is one of the documented enum
    lambda d: d["history"][1].update(type="done"),  # invoke, ok, fail or info
    lambda d: d["history"][2].pop("index"),  # every op has its place in the total order
    lambda d: d.pop("states"),  # a run gives its states beside its history
    lambda d: d.pop("aborted"),  # every run counts the transactions PostgreSQL aborted
])
def test_an_output_off_the_schema_is_rejected(break_it):
    data = copy.deepcopy(RUN)
    break_it(data)
    with pytest.raises(jsonschema.ValidationError):
        schema_validator().validate(data)


def test_the_schema_documents_every_op_the_history_can_hold_and_no_other():
    op = schema_validator().schema["$defs"]["op"]["properties"]
    assert op["f"]["enum"] == [f.value for f in F]
    assert op["type"]["enum"] == [t.value for t in Type]
