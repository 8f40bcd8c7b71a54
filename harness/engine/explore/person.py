"""The person at the terminal as the chooser (`racelab step`): each step shows who can move
(the statement next), who is blocked and on whom, who is done and the shared state so far,
then asks who moves next. On a pipe each letter read picks a step, and once the input ends the
rest run in order."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.text import Text

from harness.engine.explore.steps import View, default_choice, why_not


def _state_line(view: View) -> str:
    state = view.state() or {}
    parts = [f"{k} {v}" for k, v in state.items() if isinstance(v, (int, float, str))]
    return " · ".join(parts) or "—"


class Person:
    """A chooser that asks: on a terminal at a prompt; on a pipe each letter read picks a step,
    and at the end of the input the rest run in order (`steps.default_choice`)."""

    def __init__(self, console: Console, interactive: bool):
        self.console, self.interactive = console, interactive
        self.typed: list[str] = []
        self.eof = False

    def show(self, view: View) -> None:
        c = self.console
        c.print(Text(f"{view.t:%H:%M:%S} · step {view.step + 1} · committed: "
                     f"{_state_line(view)}", style="bold"))
        for name, sql in view.next.items():
            c.print(Text(f"  {name}  next: ", style="green").append(sql, style="default"))
        for name, on in view.blocked.items():
            c.print(Text(f"  {name}  blocked: waits for {' and '.join(on)}", style="yellow"))
        for name in view.done:
            c.print(Text(f"  {name}  done", style="dim"))

    def choose(self, view: View) -> str:
        self.show(view)
        if self.interactive:
            return self._ask(view)
        letter = self._next_letter()
        if letter is None:
            letter = default_choice(view)
            self.console.print(f"  → {letter} (input ended: the rest in order)", style="dim")
        else:
            self.console.print(f"  → {letter}")
        return letter

    def _ask(self, view: View) -> str:
        default = default_choice(view)
        while True:
            try:
                answer = input(f"who moves next? [{'/'.join(view.next)}] (Enter: {default}) ")
            except EOFError:
                return default
            letter = answer.strip().upper() or default
            if letter in view.next:
                return letter
            self.console.print(f"  {why_not(view, letter)}", style="red")

    def left(self) -> str:
        """What was typed ahead and never played (the rest of a piped input)."""
        if self.interactive:
            return ""
        rest = self.typed + ([] if self.eof else [c for c in sys.stdin.read() if not c.isspace()])
        self.typed, self.eof = [], True
        return "".join(rest)

    def _next_letter(self) -> str | None:
        while not self.typed and not self.eof:
            line = sys.stdin.readline()
            self.eof = not line
            self.typed = [ch.upper() for ch in line if not ch.isspace()]
        return self.typed.pop(0) if self.typed else None
