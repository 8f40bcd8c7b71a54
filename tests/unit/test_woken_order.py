"""Which waiter went on first is read from the history: the order the harness saw processes
begin to wait, and the order the statements they waited in completed."""

from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace

from harness.engine.model import scenario, stages
from harness.engine.model.history import F, History, Op, Type
from harness.engine.run import cells, runner

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


IN_ORDER = (("B", Type.INVOKE, F.WRITE), ("B", Type.INFO, F.BLOCK),
            ("C", Type.INVOKE, F.WRITE), ("C", Type.INFO, F.BLOCK),
            ("B", Type.OK, F.WRITE), ("C", Type.OK, F.WRITE))
OUT_OF_ORDER = IN_ORDER[:4] + (IN_ORDER[5], IN_ORDER[4])


def _scripted_runs(monkeypatch, orders: list[tuple]) -> list[int]:
    """runner.run replaced by runs whose histories are `orders`, one per call; the calls made."""
    calls: list[int] = []

    def run(stage, scenario, settings=(), states=True):
        calls.append(len(calls))
        return SimpleNamespace(history=history(*orders[len(calls) - 1]), n=len(calls))

    monkeypatch.setattr(runner, "run", run)
    return calls


def test_a_run_whose_waiters_went_on_out_of_order_is_repeated_until_one_goes_in_order(
        monkeypatch):
    calls = _scripted_runs(monkeypatch, [OUT_OF_ORDER, OUT_OF_ORDER, IN_ORDER, IN_ORDER])
    assert runner.run_in_order(None, None).n == 3
    assert len(calls) == 3


def test_after_five_runs_out_of_order_the_fifth_stands(monkeypatch):
    calls = _scripted_runs(monkeypatch, [OUT_OF_ORDER] * 6)
    result = runner.run_in_order(None, None)
    assert (result.n, len(calls)) == (5, 5)
    assert result.history.woken_order() == (["B", "C"], ["C", "B"])


def test_only_a_cell_marked_raced_is_run_in_order(monkeypatch):
    """detours-07 × pause carries ◊ and is run in order; its staggered cell, and the pause run
    once its seed is changed (no longer the cell), are run once."""
    used: list[str] = []
    monkeypatch.setattr(runner, "run_in_order",
                        lambda st, s, settings, states: used.append("in order"))
    monkeypatch.setattr(runner, "run", lambda st, s, settings, states: used.append("once"))
    st = stages.resolve("detours-07")
    pause = scenario.resolve("pause", st.track)
    for s in (pause, scenario.resolve("staggered", st.track), pause.with_seed(8)):
        cells.run_cell(st, s)
    assert used == ["in order", "once", "once"]
