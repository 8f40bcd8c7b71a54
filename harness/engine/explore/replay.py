"""Replay of a schedule (`racelab run --schedule 'AAB BA'`): a chooser that plays the letters a
step or explore printed, one group per instant that had a choice, then goes on without
preempting. A letter of no replica, or of one blocked or done, is one line and exit 2 (the
Stepper refuses it); letters left over are the caller's to report (`Schedule.left`)."""

from __future__ import annotations

from harness.engine.explore.steps import View, default_choice
from harness.errors import UserError


def parse_schedule(text: str) -> list[list[str]]:
    """`AAB BA` → [['A', 'A', 'B'], ['B', 'A']]; one-line errors for anything else."""
    groups = [[] if group == "-" else list(group) for group in text.split()]
    for letter in (x for group in groups for x in group):
        if not ("A" <= letter <= "Z"):
            raise UserError(f"--schedule {text!r}: {letter!r} is not a replica letter (A–Z; "
                            "instants separated by spaces)")
    return groups


class Schedule:
    """A chooser that plays a schedule's letters, then goes on as `default_choice` (the rest
    in order); `left` is what the run never reached."""

    def __init__(self, groups: list[list[str]]):
        self.groups = [list(g) for g in groups]
        self.rest: list[str] = []  # the letters left in the instant being played
        self.reached = 0  # the instants with a choice the run came to

    def choose(self, view: View) -> str:
        self.reached = max(self.reached, view.instant + 1)
        self.rest = self.groups[view.instant] if view.instant < len(self.groups) else []
        return self.rest.pop(0) if self.rest else default_choice(view)

    def wants(self, position: int, racers: tuple[str, ...]) -> str | None:
        """Of `racers`, the one whose letter comes next after the step just chosen: the loser
        of a race cannot move before the winner commits."""
        return next((x for x in self.rest if x in racers), None)

    @property
    def left(self) -> int:
        """The letters never played, and the instants (a `-` too) the run never came to."""
        return sum(len(g) for g in self.groups) + max(0, len(self.groups) - self.reached)
