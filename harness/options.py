"""Options of the command line that only mean something together: contradictions are refused
with one line (exit 2), never settled silently."""

from __future__ import annotations

import argparse
import os

from harness.engine import limits, registry, stages
from harness.errors import UserError
from harness.writes import Target


def positive(text: str) -> int:
    """A whole number of at least 1 (`find-race --max-examples`)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def seed(text: str) -> int:
    """`--seed N`: any whole number."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def replicas(text: str) -> int:
    """`--replicas N`: the bound scenario files have (limits.MAX_REPLICAS), checked as parsed."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    try:
        return limits.replicas(value, "")
    except UserError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(": ")) from None


def matrix_stages(names: list[str] | None, track: str | None,
                  default: str) -> tuple[list[stages.Stage], str]:
    """The stages `matrix` runs and their track: `--stage` all on one track, and on `--track`'s
    when both are given."""
    if not names:
        return stages.stages_of(track or default), track or default
    chosen = [stages.resolve(n) for n in names]
    tracks = list(dict.fromkeys(s.track for s in chosen))
    if len(tracks) > 1:
        raise UserError(f"matrix: --stage names stages of the {' and '.join(tracks)} tracks; "
                        "one matrix is one track's (run one matrix per track, or report)")
    if track and tracks[0] != track:
        raise UserError(f"matrix: --track {track} but stage {chosen[0].id} is on the "
                        f"{tracks[0]} track")
    return chosen, tracks[0]


def nonempty(text: str, option: str) -> str:
    """`text` unless blank: an empty path would quietly mean the current folder."""
    if not text.strip():
        raise UserError(f"{option}: an empty path")
    return text


def report_stages(names: list[str] | None) -> tuple[dict[str, list[stages.Stage]], list[str]]:
    """The stages `report` runs, by track, and a note for each track it leaves out, all before
    any run: without --stage every track whose libraries are installed (the others noted, e.g.
    the peers after `make demo`'s light install); a chosen stage whose track cannot run is one
    line and exit 2."""
    chosen = [stages.resolve(n) for n in names or ()]
    plan, notes = {}, []
    for name, track in registry.tracks().items():
        mine = [s for s in chosen if s.track == name] if chosen else stages.stages_of(name)
        if mine and (missing := track.missing()):
            if chosen:
                raise UserError(f"report: {missing}")
            notes.append(f"the {name} track is left out: {missing}")
        elif mine:
            plan[name] = mine
    return plan, notes


def run_files(svg: str | None, html: str | None, force: bool
              ) -> tuple[Target | None, Target | None]:
    """`run --svg FILE` and `--html FILE`, each checked before the run, never the same file
    (the page would silently replace the picture)."""
    if svg and html and os.path.abspath(svg) == os.path.abspath(html):
        raise UserError(f"run: --svg and --html both name {html}; give each its own file")
    return (Target(svg, "--svg", force) if svg else None,
            Target(html, "--html", force) if html else None)
