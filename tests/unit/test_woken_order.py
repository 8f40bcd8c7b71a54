"""Which waiter went on first is read from the history: the order the harness saw processes
begin to wait, and the order the statements they waited in completed."""

from __future__ import annotations

from datetime import datetime

from harness.engine.history import F, History, Op, Type

T = datetime(2026, 5, 29, 18, 0)


def history(*ops: tuple[str, Type, F]) -> History:
    h = History()
    h.ops = [Op(p, type_, f, T, {}, at) for at, (p, type_, f) in enumerate(ops)]
    return h


def test_waiters_let_on_in_the_order_they_began_to_wait():
    h = history(("B", Type.INVOKE, F.WRITE), ("B", Type.INFO, F.BLOCK),
                ("C", Type.INVOKE, F.WRITE), ("C", Type.INFO, F.BLOCK),
                ("A", Type.OK, F.COMMIT), ("B", Type.OK, F.WRITE), ("C", Type.OK, F.WRITE))
    assert h.woken_order() == (["B", "C"], ["B", "C"])


def test_a_later_waiter_let_on_first_is_out_of_order():
    h = history(("B", Type.INVOKE, F.CLAIM), ("B", Type.INFO, F.BLOCK),
                ("C", Type.INVOKE, F.CLAIM), ("C", Type.INFO, F.BLOCK),
                ("A", Type.OK, F.COMMIT), ("C", Type.OK, F.CLAIM), ("B", Type.OK, F.CLAIM))
    assert h.woken_order() == (["B", "C"], ["C", "B"])


def test_another_thread_of_a_waiting_process_is_not_its_going_on():
    """A leader's heartbeat logs while its tick waits in PostgreSQL: the wait ends when the
    statement it waited in completes, not at the process's next op."""
    h = history(("B", Type.INVOKE, F.CLAIM), ("B", Type.INFO, F.BLOCK),
                ("C", Type.INVOKE, F.CLAIM), ("C", Type.INFO, F.BLOCK),
                ("B", Type.INFO, F.LOG), ("A", Type.OK, F.COMMIT),
                ("C", Type.OK, F.CLAIM), ("B", Type.OK, F.CLAIM))
    assert h.woken_order() == (["B", "C"], ["C", "B"])
