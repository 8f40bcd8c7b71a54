"""The person at the terminal as the chooser (`racelab step`): each step shows who can move
(the statement next), who is blocked and on whom, who is done and the shared state so far,
then asks who moves next. On a pipe each letter read picks a step, and once the input ends the
rest run in order."""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Callable

from rich.console import Console
from rich.text import Text

from harness import interrupts
from harness.engine.explore.steps import View, default_choice, why_not

CHUNK = 4096  # bytes read from a pipe at a time
LEFT_LIMIT = 65536  # bytes of input left over read after the run, at most: enough to say so
POLL_S = 0.2  # how often a wait for piped input looks for Ctrl-C


class Piped:
    """The piped input, read as the run needs it: a letter at a time, never more than a chunk
    ahead, never waiting once the run has ended, and never past a Ctrl-C (a `yes` on the other
    end, or a writer that keeps its end open, must not hold the command)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = b""
        self.eof = False

    def letter(self) -> str | None:
        """The next non-blank character, waiting for it; None at the end of the input."""
        while True:
            text = self.buffer.lstrip()
            if text:
                self.buffer = text[1:]
                return text[:1].decode("utf-8", "replace").upper()
            self.buffer = b""
            if self.eof:
                return None
            self._read(wait=True)

    def rest(self) -> str:
        """What is already there, unread (up to LEFT_LIMIT), without waiting for more."""
        while not self.eof and len(self.buffer) < LEFT_LIMIT and self._ready(0):
            self._read(wait=False)
        return "".join(self.buffer[:LEFT_LIMIT].decode("utf-8", "replace").split())

    def _ready(self, timeout: float) -> bool:
        return bool(select.select([self.fd], [], [], timeout)[0])

    def _read(self, wait: bool) -> None:
        while wait and not self._ready(POLL_S):
            if interrupts.fired():
                raise KeyboardInterrupt
        chunk = os.read(self.fd, CHUNK)
        self.eof = not chunk
        self.buffer += chunk


def _state_line(view: View) -> str:
    state = view.state() or {}
    parts = [f"{k} {v}" for k, v in state.items() if isinstance(v, (int, float, str))]
    return " · ".join(parts) or "—"


class Person:
    """A chooser that asks: on a terminal at a prompt; on a pipe each letter read picks a step,
    and at the end of the input the rest run in order (`steps.default_choice`)."""

    def __init__(self, console: Console, interactive: bool,
                 said: Callable[[tuple], str] = lambda ops: ""):
        self.console, self.interactive = console, interactive
        self.piped = None if interactive else Piped(sys.stdin.fileno())
        self.said = said  # what a step's ops came to, in a person's words ("" for nothing)

    def show(self, view: View) -> None:
        c = self.console
        if view.previous and (words := self.said(view.ran.get(view.previous, ()))):
            c.print(Text(f"  {view.previous}  got: {words}", style="cyan"))
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
        letter = self.piped.letter()
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
        """What was typed ahead and never played: the rest of a piped input that is already
        there when the run ends (a writer still writing is not waited for)."""
        return "" if self.piped is None else self.piped.rest()
