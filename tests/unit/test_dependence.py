"""The reduction's dependence relation, without services: what a statement touches, read from
its text and parameters (harness.engine.inside.access), and which steps of two replicas can
change each other's outcome (harness.engine.explore.dpor.dependent)."""

from __future__ import annotations

import pytest

from harness.engine.explore.dpor import Schema, Transactions, dependent
from harness.engine.inside.access import ENDS, of_statement

SCHEMA = Schema(references={"notifications": {"users"}},
                referenced_by={"users": {"notifications"}},
                unique={"worker_runs": [("key", "name")], "notifications": [("id",)]},
                generated={"notifications": {"id"}})
CLAIM = ("INSERT INTO worker_runs (name, key) VALUES (%(name)s, %(key)s) "
         "ON CONFLICT (name, key) DO NOTHING RETURNING 1")
NOTE = ("INSERT INTO notifications (user_id, kind, text, created_at) VALUES (%(user_id)s::BIGINT, "
        "%(kind)s::VARCHAR, %(text)s::VARCHAR, %(created_at)s::TIMESTAMP WITH TIME ZONE)")


def touch(sql: str, parameters=None):
    return SCHEMA.touch(of_statement(sql, parameters))


def ended(*statements: tuple[str, dict | None]):
    """The touch of the COMMIT that ends a transaction of `statements`."""
    txns = Transactions(SCHEMA)
    txns.at(0)
    for sql, parameters in statements:
        txns.moved("A", of_statement(sql, parameters))
    return txns.next("A", ENDS)


def test_a_statement_reads_names_its_tables_and_keys():
    a = of_statement("SELECT users.id FROM users JOIN activity ON activity.user_id = users.id")
    assert (a.reads, a.writes, a.inserts) == ({"users", "activity"}, set(), set())
    assert of_statement("SELECT pg_try_advisory_xact_lock(%(key)s)", {"key": 7}).keys == {"7"}
    assert of_statement("SELECT pg_advisory_xact_lock($1::INTEGER)", (9,)).keys == {"9"}
    claim = of_statement(CLAIM, {"name": "close", "key": "2026-W22"})
    assert claim.inserts == {"worker_runs"}
    assert claim.rows == ((("name", "close"), ("key", "2026-W22")),)
    assert of_statement("SELECT 1 FROM t FOR UPDATE").writes == {"t"}
    assert of_statement("SELECT 'FROM t'").reads == set()  # a string names no table


@pytest.mark.parametrize("sql", ["WITH x AS (SELECT 1) SELECT * FROM x", "SELECT nextval('s')",
                                 "SAVEPOINT a", "LOCK TABLE t", "CALL f()"])
def test_what_cannot_be_read_touches_everything(sql):
    assert of_statement(sql).unknown
    assert dependent(touch(sql), touch("SELECT 1"))


def test_two_claims_of_one_key_are_dependent_of_two_keys_are_not():
    week22 = touch(CLAIM, {"name": "close", "key": "2026-W22"})
    week23 = touch(CLAIM, {"name": "close", "key": "2026-W23"})
    assert dependent(week22, touch(CLAIM, {"name": "close", "key": "2026-W22"}))
    assert not dependent(week22, week23)
    unread = touch("INSERT INTO worker_runs (name, key) SELECT 'close', 'x'")
    assert dependent(unread, week23)  # a key it could not read is any key of the table


def test_inserts_of_rows_a_sequence_numbers_are_independent():
    one = touch(NOTE, {"user_id": 101, "kind": "top3", "text": "a", "created_at": "t"})
    two = touch(NOTE, {"user_id": 102, "kind": "top3", "text": "b", "created_at": "t"})
    assert not dependent(one, two)
    assert one.shared == {"users"}  # the foreign key's check locks the member's row
    assert dependent(one, touch("DELETE FROM users WHERE id = 101"))


def test_a_read_and_an_uncommitted_write_are_independent_the_commit_is_not():
    read = touch("SELECT count(*) FROM notifications")
    note = (NOTE, {"user_id": 101, "kind": "top3", "text": "a", "created_at": "t"})
    assert not dependent(read, touch(*note))
    assert dependent(read, ended(note))
    assert not dependent(ended(note), ended(("SELECT 1 FROM users", None)))


def test_updates_of_one_table_and_advisory_keys():
    update = touch("UPDATE threads SET closed = true WHERE closed IS false")
    assert dependent(update, touch("UPDATE threads SET title = 'x'"))
    assert not dependent(update, touch("UPDATE users SET username = 'x'"))
    lock = touch("SELECT pg_try_advisory_xact_lock(%(key)s)", {"key": 1})
    assert dependent(lock, touch("SELECT pg_try_advisory_xact_lock(%(key)s)", {"key": 1}))
    assert not dependent(lock, touch("SELECT pg_try_advisory_xact_lock(%(key)s)", {"key": 2}))
    assert dependent(lock, ended(("SELECT pg_try_advisory_xact_lock(%(key)s)", {"key": 1})))


def test_a_schema_with_more_than_tables_makes_every_step_dependent():
    opaque = Schema(opaque=True)
    a = opaque.touch(of_statement("SELECT 1 FROM a"))
    assert dependent(a, opaque.touch(of_statement("SELECT 1 FROM b")))
