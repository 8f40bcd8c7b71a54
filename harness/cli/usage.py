"""What racelab says about itself: its version and its commands, one line each (bare `racelab`,
`racelab --version`), and the stages of every track (`run --help`)."""

from __future__ import annotations

import argparse
import sys
from importlib import metadata

from harness.engine.model import registry, stages


def version() -> str:
    try:
        return metadata.version("racelab")
    except metadata.PackageNotFoundError:  # run from a checkout that pip never installed
        return "(not installed: make setup installs it)"


def stage_list() -> str:
    """Every track's stages, as `run` takes them: `cron 00 01 …; alerts alerts-00 …`."""
    return "; ".join(f"{name} {' '.join(s.id for s in stages.stages_of(name))}"
                     for name, track in registry.tracks().items() if track.stage_dir is not None)


def summary(parser: argparse.ArgumentParser) -> str:
    """The version, then each command with its one line of help."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    commands = [(a.dest, a.help or "") for a in sub._choices_actions]
    width = max(len(name) for name, _ in commands)
    tracks = [name for name, track in registry.tracks().items() if track.stage_dir is not None]
    width = max(width, *(len(track) for track in tracks))
    return "\n".join([f"racelab {version()}: {parser.description}", "", "commands:",
                      *(f"  {name:<{width}}  {text}" for name, text in commands), "",
                      "stages, by track:",
                      *(f"  {track:<{width}}  {' '.join(s.id for s in stages.stages_of(track))}"
                        for track in tracks), "",
                      "a job of your own: racelab run --project DIR (docs/own-job.md)",
                      "racelab COMMAND --help says more about one command."])


def bare(parser: argparse.ArgumentParser) -> int:
    """`racelab` with no command: the summary, then one line on stderr, exit 2."""
    print(summary(parser))
    print("racelab: no command given (the commands are listed above)", file=sys.stderr)
    return 2


class Version(argparse.Action):
    """`--version`: the summary on stdout, exit 0."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0,
                         help="print the version and the commands, then exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(summary(parser))
        parser.exit(0)
