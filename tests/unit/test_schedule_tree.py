"""The explorer's tree without services: on a model of processes that each take a fixed number
of steps, the prefixes `split.branches` hands out reach every interleaving with at most K
preemptions exactly once (checked against brute force), and a schedule's text round-trips."""

from __future__ import annotations

from datetime import datetime
from itertools import permutations

import pytest

from harness.engine.explore import dfs, replay, split, steps
from harness.engine.explore.steps import Step, View


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
        played = _play(lengths, dfs.Prefix(prefix))
        assert [s.chosen for s in played][:len(prefix)] == prefix
        seen.append("".join(s.chosen for s in played))
        todo += reversed(split.branches(played, prefix, bound))
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
    assert replay.parse_schedule(text) == [["A", "B"], [], ["B"]]


def _share(lengths: dict[str, int], bound: int, me: int, shares: int) -> tuple[list[str], int]:
    """What share `me` of `shares` explores on the model, as explore's shares do: the split's
    runs, its pieces' leaves, and every schedule of the subtrees dealt to it; with how many
    runs it made that fell to others."""
    def run(prefixes):
        return [_play(lengths, dfs.Prefix(p)) for p in prefixes]

    made = []
    parts = split.pieces(bound, shares, lambda ps: made.extend(ps) or run(ps))
    mine = split.deal(parts, shares)[me - 1]
    seen = ["".join(s.chosen for s in _play(lengths, dfs.Prefix(p.prefix)))
            for p in mine if p.leaf]
    todo = [p.prefix for p in mine if not p.leaf]
    while todo:
        prefix = todo.pop()
        played = _play(lengths, dfs.Prefix(prefix))
        seen.append("".join(s.chosen for s in played))
        todo += reversed(split.branches(played, prefix, bound))
    return seen, len(made) - sum(p.leaf for p in mine)


@pytest.mark.parametrize("lengths", [{"A": 6, "B": 6}, {"A": 4, "B": 3, "C": 3},
                                     {"A": 12, "B": 12}])
@pytest.mark.parametrize("shares", [2, 3])
def test_shares_are_disjoint_cover_the_tree_and_are_within_a_factor_of_2(lengths, shares):
    whole = set(_brute(lengths, 2)) if sum(lengths.values()) <= 10 else set(_explored(lengths, 2))
    got = [_share(lengths, 2, me, shares)[0] for me in range(1, shares + 1)]
    assert sum(len(g) for g in got) == len(whole)
    assert set().union(*map(set, got)) == whole
    sizes = [len(g) for g in got]
    assert max(sizes) <= 2 * min(sizes), sizes


def test_a_subtree_estimate_counts_interleavings_as_if_none_waited():
    """Two processes of 3 steps: 'B' first leaves A 3 and B 2, with 2 preemptions left less
    none spent: the interleavings of AAA and BB that start after B, ≤ 2 switches away from a
    process with steps left (BBAAA, BABAA… counted on the model)."""
    played = _play({"A": 3, "B": 3}, dfs.Prefix([]))
    assert "".join(s.chosen for s in played) == "AAABBB"
    for prefix in split.branches(played, [], 2):
        subtree = {s for s in _brute({"A": 3, "B": 3}, 2) if s.startswith("".join(prefix))}
        assert split.estimate(played, prefix, 2) == len(subtree), prefix
