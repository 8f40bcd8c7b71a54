"""A run's picture is read from its history alone: steps in the history's order and numbered
within their instant, a lock held until its COMMIT, a refusal linked to the holder, an op
reported late drawn at the instant it happened."""

from __future__ import annotations

from datetime import datetime, timedelta

from harness.engine.model.history import F, Op, Type
from harness.engine.views import picture_data

T0 = datetime.fromisoformat("2026-05-29T18:00:00-06:00")


def ops(*rows) -> list[Op]:
    """(process, type, f, value[, minutes after T0]) rows, stamped in the order given."""
    return [Op(p, Type(t), F(f), T0 + timedelta(minutes=m[0] if m else 0), v, at=k)
            for k, (p, t, f, v, *m) in enumerate(rows)]


def tick(p: str, won: bool, m: int = 0) -> list[tuple]:
    return [(p, "invoke", "tick", {}, m), (p, "invoke", "txn", {}, m),
            (p, "invoke", "lock", {"xact": True}, m),
            (p, "ok", "lock", {"xact": True, "result": won}, m)]


def ends(p: str, how: str = "commit", m: int = 0) -> list[tuple]:
    return [(p, "invoke", how, {}, m), (p, "ok", how, {}, m),
            (p, "ok" if how == "commit" else "fail", "txn", {}, m), (p, "ok", "tick", {}, m)]


def drawn(history: list[Op]) -> picture_data.Drawn:
    return picture_data.build(history, [], ["A", "B"], {}, {}, lambda v: ("", {}))


def test_a_transaction_lock_is_held_until_its_commit_and_the_refusal_points_at_the_holder():
    """A takes the lock, B is refused while A holds it, then A commits: A's lock is one
    interval ending at A's COMMIT, and B's refusal links to A."""
    history = ops(*tick("A", True), *tick("B", False), *ends("B", "rollback"), *ends("A"))
    d = drawn(history)
    commit = next(i for i, op in enumerate(history) if op.process == "A" and op.f is F.COMMIT
                  and op.type is Type.OK)
    assert [(iv.process, iv.start, iv.end) for iv in d.intervals if iv.f == "lock"] == [
        ("A", 3, commit)]
    assert [(link.process, link.holder, link.what) for link in d.links] == [("B", "A", "lock")]
    refused = d.steps[d.step_of[7]]
    assert (refused.kind, refused.labels) == ("refused", ["lock ✗ A holds the lock"])
    # the COMMIT that lets the lock go says so; B's ROLLBACK, which held none, does not
    assert d.steps[d.step_of[commit]].labels == ["COMMIT: lock released"]
    rollback = next(i for i, op in enumerate(history) if op.process == "B"
                    and op.f is F.ROLLBACK and op.type is Type.OK)
    assert "lock released" not in " ".join(d.steps[d.step_of[rollback]].labels)


def test_steps_keep_the_history_order_and_are_numbered_within_each_instant():
    """Interleaved processes give interleaved steps; numbering starts again at a new instant."""
    history = ops(*tick("A", True), *tick("B", False), *ends("B", "rollback"), *ends("A"),
                  *tick("A", True, 1), *ends("A", m=1))
    steps = drawn(history).steps
    assert [(s.process, s.n) for s in steps] == [
        ("A", 1), ("A", 2), ("B", 3), ("B", 4), ("B", 5), ("A", 6),
        ("A", 1), ("A", 2), ("A", 3)]


def test_an_op_reported_late_is_drawn_at_the_earliest_instant_after_it():
    """A process held across instants reports its earlier ops with a later `t`: an op is drawn
    at the earliest `t` from it on, so virtual time never runs back in the picture."""
    history = ops(("A", "invoke", "tick", {}, 0), ("A", "invoke", "write", {}, 5),
                  ("B", "invoke", "tick", {}, 1), ("A", "ok", "tick", {}, 5))
    assert [t - T0 for t in picture_data.instants(history)] == [
        timedelta(0), timedelta(minutes=1), timedelta(minutes=1), timedelta(minutes=5)]


def test_an_empty_transaction_is_no_step():
    """BEGIN … ROLLBACK with nothing in it draws nothing; the tick around it still does."""
    history = ops(("A", "invoke", "tick", {}), ("A", "invoke", "txn", {}),
                  ("A", "invoke", "rollback", {}), ("A", "ok", "rollback", {}),
                  ("A", "fail", "txn", {}), ("A", "ok", "tick", {}))
    d = drawn(history)
    assert sorted(d.step_of) == [0, 5]


def test_decisions_alike_in_a_row_are_one_step():
    """600 dedup lookups in one tick would be 600 circles: alike ones in a row are one step
    that says how many; a different answer starts a new one."""
    looks = [row for n in range(3) for row in (
        ("A", "invoke", "dedup", {"key": f"k{n}"}),
        ("A", "ok", "dedup", {"key": f"k{n}", "result": "miss", "sent": True}))]
    hit = [("A", "invoke", "dedup", {"key": "k0"}),
           ("A", "ok", "dedup", {"key": "k0", "result": "hit", "sent": False})]
    steps = drawn(ops(("A", "invoke", "tick", {}), *looks, *hit, ("A", "ok", "tick", {}))).steps
    assert [(s.kind, s.labels) for s in steps[1:3]] == [
        ("won", ["dedup k0: miss (×3, keys alike)"]), ("refused", ["dedup k0: hit → held back"])]


def test_a_wait_inside_postgresql_points_at_the_row_not_at_a_redis_lease_its_holder_has():
    """A holds a Redis lock (a lease) and writes a row; B, blocked in the database, waits on
    A's row: a database wait is never on a Redis lock, whoever holds one."""
    lease = {"key": "worker-lock", "redis": True, "lease_s": 60}
    history = ops(("A", "invoke", "tick", {}), ("A", "invoke", "lock", lease),
                  ("A", "ok", "lock", {**lease, "result": True}), ("A", "invoke", "txn", {}),
                  ("A", "invoke", "write", {"table": "coins"}),
                  ("A", "ok", "write", {"table": "coins", "rows": 1}),
                  ("B", "invoke", "tick", {}), ("B", "invoke", "txn", {}),
                  ("B", "info", "block", {"on": ["A"]}), *ends("A"))
    d = drawn(history)
    assert [(link.process, link.holder, link.what) for link in d.links] == [("B", "A", "row")]
    assert d.steps[d.step_of[8]].labels == ["waits: A holds the row"]
