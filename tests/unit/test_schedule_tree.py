"""The explorer's tree without services: on a model of processes that each take a fixed number
of steps, the prefixes `explore._branches` hands out reach every interleaving with at most K
preemptions exactly once (checked against brute force), and a schedule's text round-trips."""

from __future__ import annotations

from datetime import datetime
from itertools import permutations

import pytest

from harness.engine import explore, steps
from harness.engine.steps import Step, View


def _play(lengths: dict[str, int], chooser) -> list[Step]:
    """One instant of processes that each move `lengths[name]` times, never blocked."""
    left = dict(lengths)
    played: list[Step] = []
    previous = None
    while any(left.values()):
        can = {n: "SQL" for n in sorted(left) if left[n]}
        view = View(datetime(2026, 5, 29), 0, len(played), can, {}, [], previous)
        name = chooser.choose(view)
        played.append(Step(0, tuple(can), name, previous))
        left[name] -= 1
        previous = name
    return played


def _explored(lengths: dict[str, int], bound: int) -> list[str]:
    todo: list[list[str]] = [[]]
    seen = []
    while todo:
        prefix = todo.pop()
        played = _play(lengths, explore.Prefix(prefix))
        assert [s.chosen for s in played][:len(prefix)] == prefix
        seen.append("".join(s.chosen for s in played))
        todo += reversed(explore._branches(played, len(prefix), bound))
    return seen


def _brute(lengths: dict[str, int], bound: int) -> set[str]:
    letters = "".join(n * k for n, k in lengths.items())
    out = set()
    for order in set(permutations(letters)):
        left, switches, previous = dict(lengths), 0, None
        for name in order:
            if previous is not None and previous != name and left[previous]:
                switches += 1
            left[name] -= 1
            previous = name
        if switches <= bound:
            out.add("".join(order))
    return out


@pytest.mark.parametrize("lengths", [{"A": 3, "B": 2}, {"A": 2, "B": 2, "C": 2}])
@pytest.mark.parametrize("bound", [0, 1, 2])
def test_every_schedule_within_the_bound_is_reached_once(lengths, bound):
    seen = _explored(lengths, bound)
    assert len(seen) == len(set(seen))
    assert set(seen) == _brute(lengths, bound)


def test_no_preemption_means_one_schedule_per_first_choice_order():
    assert sorted(_explored({"A": 2, "B": 1}, 0)) == ["AAB", "BAA"]


def test_a_schedule_round_trips_through_its_text_with_an_empty_instant():
    played = [Step(0, ("A", "B"), "A", None), Step(0, ("A", "B"), "B", "A"),
              Step(2, ("A", "B"), "B", None)]
    text = steps.format_schedule(played)
    assert text == "AB - B"
    assert steps.parse_schedule(text) == [["A", "B"], [], ["B"]]
