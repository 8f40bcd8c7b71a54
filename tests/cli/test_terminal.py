"""What a person sees in a terminal: matrices that fit 80 columns with no cell cut short ("…")
or wrapped onto a second line, and a command line that says what it can do."""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from collections.abc import Callable

import pytest

from harness.cli import main as cli
from harness.cli import usage
from harness.engine.model import registry, stages
from tests.helpers import ROOT, racelab_here, terminal_cells

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def in_a_pty(args: list[str], columns: int, timeout: float = 600,
             answer: Callable[[bytes], bytes | None] = lambda seen: None) -> str:
    """What `racelab ARGS` prints in a pseudo-terminal `columns` wide, without colour codes;
    `answer(everything printed so far)` is asked after each read and what it returns (if
    anything) is typed in. The command must exit 0."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "50", "TERM": "xterm-256color"}
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, env=env,
                            stdin=follower, stdout=follower, stderr=follower)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the follower side closed: the command is done
            break
        if not chunk:
            break
        seen += chunk
        if (typed := answer(seen)) is not None:
            os.write(leader, typed)
    os.close(leader)
    assert proc.wait(timeout=timeout) == 0
    return ANSI.sub("", seen.decode())


def in_a_terminal(*args: str, columns: int = 80, timeout: float = 600,
                  since: str = "racelab matrix ·") -> list[str]:
    """What `racelab ARGS` prints in a pseudo-terminal `columns` wide, as lines without colour
    codes, from the line holding `since` on (the progress line before it is redrawn in place)."""
    lines = re.split(r"\r\n|\n", in_a_pty(list(args), columns, timeout))
    start = max(i for i, line in enumerate(lines) if since in line)
    return [line.rsplit("\r", 1)[-1].rstrip() for line in lines[start:] if line.strip()]


def rows(lines: list[str]) -> list[list[str]]:
    """The body rows of the tables printed, each as its cells."""
    return [[cell.strip() for cell in line.strip("│").split("│")]
            for line in lines if line.startswith("│")]


@pytest.mark.slow
def test_at_80_columns_stages_01_and_03_show_each_scenario_on_one_row_uncut():
    """The cron matrix turns (scenarios as rows) and every cell reads whole on its own line."""
    lines = in_a_terminal("matrix", "--stage", "01", "--stage", "03")
    assert "…" not in "\n".join(lines)
    assert max(len(line) for line in lines) <= 80
    assert rows(lines) == [
        ["simultaneous", "1 †", "1"], ["staggered", "3", "1"],
        ["silent-failure", "3 partial", "1 partial"], ["crash-after-claim", "2", "1"],
        ["deploy-restart", "3", "1"], ["kill-mid-tick", "2", "1"], ["clock-skew", "3", "1"],
        ["week", "3", "1"], ["pause", "1 §", "1"], ["claim-cleanup", "—", "2 §"],
        ["dst-fall-back", "2 §", "1 §"],
        ["dst-spring-forward", "0 (1 missed) §", "0 (1 missed) §"], ["replica-lag", "3", "1"],
        ["standby-failover", "3", "2 §"]]
    assert "columns: 01 = 01-advisory-lock · 03 = 03-claim-row" in lines


def test_at_80_columns_a_run_table_folds_what_each_consumer_received_under_it():
    """The detours-03 run's table keeps its counts as columns; the partial and received columns
    (too wide for 80) follow as lines named by the slot, wrapped, never cut."""
    lines = in_a_terminal("run", "detours-03", "--scenario", "staggered",
                          since="detours/03-notification-dedup ·")
    text = "\n".join(lines)
    assert "…" not in text
    assert max(len(line) for line in lines) <= 80
    assert rows(lines) == [["leaderboard_close", "2026-W22", "1", "3", "2", "0"]]
    assert "leaderboard_close 2026-W22 partial: yes: 0 of 3 notifications" in lines
    received = text[text.index("leaderboard_close 2026-W22 received:"):].split("\nreplicas")[0]
    assert " ".join(received.split()) == ("leaderboard_close 2026-W22 received: "
                                          "notifications 3 of 3, coins 90 of 30, threads 3 of 1")


@pytest.mark.slow
def test_at_80_columns_the_alerts_matrix_shows_each_scenario_on_one_row_uncut():
    """redis-down and redis-failover are told apart, and '1 extra, accepted ‡' reads whole."""
    lines = in_a_terminal("matrix", "--track", "alerts")
    assert "…" not in "\n".join(lines)
    assert max(len(line) for line in lines) <= 80
    assert rows(lines) == [
        ["two-replicas", "1 extra", "ok"], ["incident", "4 extra ‡§", "ok"],
        ["deploy", "3 extra ‡§", "ok"], ["other-creator", "2 extra", "ok"],
        ["p0", "1 missed §", "ok"], ["redis-down", "1 extra", "1 extra, accepted"],
        ["redis-slow", "ok", "ok"], ["prune-flood", "1 extra", "ok"],
        ["reconcile", "2 extra", "ok"], ["redis-failover", "1 extra", "1 extra, accepted ‡"],
        ["overlap", "1 overlapped ‡§", "1 overlapped ‡§"]]
    assert "column alerts-00 = alerts/00-in-memory-dedup" in lines


def test_bare_racelab_prints_the_version_and_the_commands_then_one_line_and_exit_2():
    """Not argparse's 'the following arguments are required: command' alone."""
    done = racelab_here()
    assert done.returncode == 2
    assert done.stdout.splitlines()[0] == f"racelab {usage.version()}: A reproducible " \
                                          "race-condition lab."
    assert re.findall(r"^  ([a-z-]+)  ", done.stdout, re.M)[:8] == [
        "run", "matrix", "report", "scenarios", "services", "clean", "bench", "find-race"]
    assert done.stderr == "racelab: no command given (the commands are listed above)\n"


def test_racelab_version_prints_the_version_and_the_commands_and_exits_0():
    done = racelab_here("--version")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("racelab 0.1.0: ")
    assert "  find-race  search scenarios for a duplicate" in done.stdout
    assert "  peers      peers-01 peers-02 peers-03 peers-04 peers-05" in done.stdout


def _actions(parser: argparse.ArgumentParser, where: str = "racelab"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                yield f"{where} {choice.dest}", choice
            for name, sub in action.choices.items():
                yield from _actions(sub, f"{where} {name}")
        else:
            yield f"{where} {'/'.join(action.option_strings) or action.dest}", action


def test_every_command_and_option_has_help_text():
    """Walks the whole parser: `matrix --track`, `--json`, `--svg` and the rest say what they do."""
    found = list(_actions(cli.build_parser()))
    silent = [name for name, action in found if not (action.help or "").strip()]
    assert len(found) > 40
    assert silent == []


@pytest.mark.parametrize("track", list(registry.tracks()))
def test_run_help_lists_every_stage_of_every_track(track):
    """`run --help` names the peers stages too, not only 00 … 05 and alerts."""
    text = " ".join(racelab_here("run", "--help").stdout.split())
    assert f"{track} {' '.join(s.id for s in stages.stages_of(track))}" in text


def test_at_80_columns_a_timeline_wraps_under_its_own_text():
    """A timeline line too long for the window goes on under where its text starts (column 35),
    never back under the time and process columns; joined up again, the lines are the pipe's
    one line per tick, word for word."""
    lines = in_a_terminal("run", "01", "--scenario", "staggered", "--timeline",
                          since="01-advisory-lock ·")
    assert max(len(line) for line in lines) <= 80
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("T=0 "))
    timeline = lines[start:]
    assert any(line.startswith(" " * 34 + "notifications") for line in timeline)
    joined: list[str] = []
    for line in timeline:
        if line.startswith(" " * 34):
            joined[-1] += " " + line.strip()
        else:
            joined.append(line)
    piped = racelab_here("run", "01", "--scenario", "staggered", "--timeline").stdout.splitlines()
    assert joined == [line.rstrip() for line in piped[-len(joined):]]
    assert len(joined) == 3 and all("COMMIT (lock released)" in line for line in joined)


def test_step_01_as_typed_offers_a_choice_with_a_goal_and_lists_the_play_in_its_order(pg):
    """`racelab step 01` in a terminal, as an attendee types it (issue 41, item 6): a goal line,
    a choice at once (the default scenario has replicas at one instant), what each step came
    to under it, and at the end the ticks in the order the person moved them, with no † (the
    forced-overlap mark belongs to the matrix's cell, not to an order a person chose)."""
    answers, asked = ["B", "B", "A"], []

    def answer(seen: bytes) -> bytes | None:  # Enter after ours: the default moves
        if seen.count(b"who moves next?") <= len(asked):
            return None
        asked.append(answers[len(asked)] if len(asked) < len(answers) else "")
        return asked[-1].encode() + b"\n"

    lines = [line.rsplit("\r", 1)[-1].rstrip()
             for line in re.split(r"\r\n|\n", in_a_pty(["step", "01"], 120, 300, answer))]
    assert lines[0].startswith("goal: get one payout to land twice")
    assert len(asked) > 3 and "  B  got: lock ✓" in lines and "  A  got: lock ✗" in lines
    ticks = [line.split("replica ")[1][0] for line in lines if " tick [" in line]
    assert ticks == ["B", "A", "C"]
    assert "†" not in "\n".join(lines)


@pytest.mark.slow
def test_the_welcome_blocks_staggered_counts_hold_on_a_projector_120_columns_wide():
    """WORKSHOP.md's welcome reads 3, 3, 1, 1, 1, 1 off the staggered counts and says how the
    table turns at about 120 columns (issue 41, item 8): at that width it is turned, and the
    staggered row gives those counts for 00 to 05, 05 in the table under the first."""
    lines = in_a_terminal("matrix", "--track", "cron", columns=120)
    assert max(len(line) for line in lines) <= 120
    cells = terminal_cells("\n".join(lines))
    assert [cells[("staggered", f"0{n}")] for n in range(6)] == ["3", "3", "1", "1", "1", "1"]
    welcome = (ROOT / "WORKSHOP.md").read_text().split("## Welcome and the matrix")[1]
    assert "from 00 to 05: 3, 3, 1, 1, 1, 1" in " ".join(welcome.split())
    assert "the table turns" in welcome
