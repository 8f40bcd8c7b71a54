"""How an exploration's shares divide the tree of schedules by work.

The tree is the explorer's (harness.engine.explore.dfs): each node a prefix of choices, run once
to its end without preempting; its children the prefixes that first differ from that run at a
step past the prefix. A share cannot know a subtree's size without running it, so it estimates
it from the run it branches off: the steps each process took in each instant there, counted as
if nobody ever waited (`estimate`). Every share expands the same nodes, in rounds, until no
subtree is estimated above a fraction of the whole (`SPLIT_GRAIN`), then deals the pieces out
largest first to the share with the least so far (`deal`). The runs are replays, so every share
computes the same pieces and the same deal from the same data, whatever its number of workers:
the shares are disjoint and together the whole tree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.engine.explore.steps import Step, preemptions

SPLIT_GRAIN = 4  # no piece above a quarter of a share's estimated load, where rounds allow
SPLIT_ROUNDS = 8  # at most this many rounds of expansion (each one run per node expanded)


def branches(steps: list[Step], prefix: list[str], bound: int) -> list[list[str]]:
    """The prefixes (of `Step.token`s) of the schedules that differ from `steps` first at a
    step past `prefix`, in order, within the bound: another choice at a step, or another waiter
    going on first in a race the run met there. A race right after the prefix's last step is
    new unless that step's token already says who went on first."""
    out = []
    start = len(prefix)
    used = preemptions(steps[:start])
    for i in range(max(start - 1, 0), len(steps)):
        step = steps[i]
        if i >= start:
            for other in step.options:
                if other == step.chosen:
                    continue
                extra = int(step.previous in step.options and other != step.previous)
                if used + extra <= bound:
                    out.append([x.token for x in steps[:i]] + [other])
            used += step.preempts
        if step.racers and (i >= start or "=" not in prefix[i]):
            out += [[x.token for x in steps[:i]] + [f"{step.chosen}={other}"]
                    for other in step.racers if other not in step.went]
    return out


def estimate(steps: list[Step], prefix: list[str], bound: int) -> int:
    """How many schedules start with `prefix`, one of `branches(steps, …)` (the run's choices to
    a step, then another), counted on the steps each process took per instant in that run, as
    if none ever waited for another: an estimate of the subtree's work, at least 1."""
    counts: list[dict[str, int]] = []
    for step in steps:
        while len(counts) <= step.instant:
            counts.append({})
        counts[step.instant][step.chosen] = counts[step.instant].get(step.chosen, 0) + 1
    i = len(prefix) - 1
    at, chosen = steps[i], prefix[-1][0]
    left = dict(counts[at.instant])
    for step in steps[:i]:
        if step.instant == at.instant:
            left[step.chosen] -= 1
    left[chosen] = max(left.get(chosen, 0) - 1, 0)
    budget = bound - preemptions(steps[:i]) - int(at.previous in at.options
                                                   and chosen != at.previous)
    return max(_count(counts, at.instant, left, chosen, max(budget, 0), {}), 1)


def _count(counts: list[dict[str, int]], instant: int, left: dict[str, int],
           previous: str | None, budget: int, memo: dict) -> int:
    """The interleavings of the steps `left` in this instant, then every later instant whole,
    with at most `budget` switches away from a process that has steps left."""
    key = (instant, tuple(sorted(left.items())), previous, budget)
    if key in memo:
        return memo[key]
    can = [p for p, n in sorted(left.items()) if n]
    if not can:
        found = 1 if instant + 1 >= len(counts) else _count(
            counts, instant + 1, counts[instant + 1], None, budget, memo)
    else:
        found = 0
        for p in can:
            cost = int(previous in can and p != previous)
            if cost <= budget:
                found += _count(counts, instant, {**left, p: left[p] - 1}, p, budget - cost,
                                memo)
    memo[key] = found
    return found


@dataclass
class Piece:
    """A part of the tree that falls to one share: a node's own schedule (`leaf`: its run is
    known) or a node's whole subtree still to explore (its estimate)."""

    prefix: list[str]
    work: int
    leaf: bool

    def order(self) -> tuple:
        return (-self.work, self.leaf, self.prefix)


def pieces(bound: int, shares: int,
           run: Callable[[list[list[str]]], list[list[Step] | None]]) -> list[Piece]:
    """The tree in pieces of at most about 1/(SPLIT_GRAIN × shares) of its estimated work:
    `run` plays a batch of prefixes (in any order, side by side) and gives each one's steps
    (None: a race never went its way). Every share must cut the same pieces, so a run is read
    only up to the first race it met past its prefix, whose outcome is PostgreSQL's pick: that
    run is no leaf, and each waiter going on first is a piece of its own, to run next round."""
    frontier = [Piece([], 0, False)]
    done: list[Piece] = []
    for _ in range(SPLIT_ROUNDS):
        total = sum(p.work for p in frontier) + len(done)
        limit = max(total / (SPLIT_GRAIN * shares), 1)
        grow = [p for p in frontier if not p.work or p.work > limit]
        if not grow:
            break
        frontier = [p for p in frontier if p not in grow]
        for node, steps in zip(grow, run([p.prefix for p in grow]), strict=True):
            race = None if steps is None else first_race(steps, node.prefix)
            if steps is None or race is None:
                done.append(Piece(node.prefix, 1, True))
            if steps is None:
                continue
            head = steps if race is None else steps[:race + 1]
            frontier += [Piece(b, estimate(head, b, bound), False)
                         for b in branches(head, node.prefix, bound) if "=" not in b[-1]]
            if race is not None:
                frontier += [Piece([s.token for s in head[:race]] + [f"{head[race].chosen}={r}"],
                                   0, False) for r in head[race].racers]
    return done + frontier


def first_race(steps: list[Step], prefix: list[str]) -> int | None:
    """The first step past `prefix` (or its last, when its token does not pin the race) after
    which waiters raced, or None."""
    start = len(prefix)
    for i in range(max(start - 1, 0), len(steps)):
        if steps[i].racers and (i >= start or "=" not in prefix[i]):
            return i
    return None


def deal(parts: list[Piece], shares: int) -> list[list[Piece]]:
    """Largest first, each to the share with the least work so far (the lowest on a tie)."""
    dealt: list[list[Piece]] = [[] for _ in range(shares)]
    load = [0] * shares
    for piece in sorted(parts, key=Piece.order):
        share = min(range(shares), key=lambda s: (load[s], s))
        dealt[share].append(piece)
        load[share] += piece.work
    return dealt
