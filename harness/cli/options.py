"""Options of the command line that only mean something together: contradictions are refused
with one line (exit 2), never settled silently."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from harness.engine.explore import replay
from harness.engine.explore.steps import Stepper
from harness.engine.model import limits, registry, stages
from harness.engine.model import scenario as scenarios
from harness.engine.model.scenario import Scenario
from harness.errors import UserError
from harness.tracks.project import description
from harness.writes import Target

positive = limits.whole_number(1)  # `find-race --max-examples`


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


def matrix_plan(names: list[str] | None, tracks: list[str] | None, default: str,
                project: str | None = None) -> dict[str, list[stages.Stage]]:
    """The stages `matrix` runs, by track, one matrix each: each `--track`'s (else the default
    track's); or `--stage`'s, by their tracks, each of which a `--track` given beside them
    must name, and each `--track` must have one of; or the one project of `--project DIR`."""
    if project is not None:
        if names or tracks:
            raise UserError("matrix --project DIR takes no --stage or --track")
        stage = project_stage(project)
        return {stage.track: [stage]}
    tracks = list(dict.fromkeys(tracks or ()))
    if not names:
        return {t: stages.stages_of(t) for t in tracks or [default]}
    plan: dict[str, list[stages.Stage]] = {}
    for stage in (stages.resolve(n) for n in names):
        if tracks and stage.track not in tracks:
            raise UserError(f"matrix: --track {' --track '.join(tracks)} but stage {stage.id} "
                            f"is on the {stage.track} track")
        plan.setdefault(stage.track, []).append(stage)
    if empty := [t for t in tracks if t not in plan]:
        raise UserError(f"matrix: --track {empty[0]} but no --stage on the {empty[0]} track")
    return {t: plan[t] for t in tracks} if tracks else plan


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


def view_files(args, views) -> dict:
    """The views written to a file that `args` asks for (`--svg FILE`, `--html FILE`, …), each
    with its Target checked before the run; no two name the same file (the later view would
    silently replace the earlier)."""
    asked = {v: path for v in views if v.metavar and (path := view_value(args, v))}
    seen: dict[str, str] = {}
    scenario = getattr(args, "scenario", None)
    read = os.path.realpath(scenario) if scenario and os.path.isfile(scenario) else None
    for v, path in asked.items():
        if (other := seen.get(os.path.abspath(path))) is not None:
            raise UserError(f"run: --{other} and --{v.name} both name {path}; give each its "
                            "own file")
        if read is not None and os.path.realpath(path) == read:  # even with --force
            raise UserError(f"--{v.name} {path} is the scenario file this run reads; give the "
                            "output a name of its own")
        seen[os.path.abspath(path)] = v.name
    return {v: Target(path, f"--{v.name}", args.force) for v, path in asked.items()}


def add_view_options(parser, views, files_only: bool = False) -> None:
    """An option for each view of a run (`--NAME FILE` for one written to a file, a flag for
    a printed one), after the command's own; with `files_only`, the views written to a file
    alone (step's). Each stores its value apart from the command's (`view_value`)."""
    for v in views:
        if not v.name or (files_only and not v.metavar):
            continue
        try:
            if v.metavar:
                parser.add_argument(f"--{v.name}", metavar=v.metavar, help=v.help,
                                    dest=f"view:{v.name}")
            else:
                parser.add_argument(f"--{v.name}", action="store_true", help=v.help,
                                    dest=f"view:{v.name}")
        except argparse.ArgumentError:
            raise UserError(f"the view {v.name!r} takes an option {parser.prog} already has: "
                            "give the view another name") from None


def view_value(args, view) -> object:
    """What the command line gave a view's option (None or False: not asked for)."""
    return getattr(args, f"view:{view.name}", None)


def add_project(parser) -> None:
    parser.add_argument("--project", metavar="DIR", help="instead of a stage: a folder of your "
                        "own whose pyproject.toml describes its job under [tool.racelab] "
                        "(docs/own-job.md)")


def stage_of(args) -> stages.Stage:
    """The STAGE, or the project of --project DIR."""
    project = getattr(args, "project", None)
    if project is None:
        if args.stage is None:
            raise UserError(f"{args.command}: which stage? give STAGE (e.g. 03) or --project "
                            "DIR")
        return stages.resolve(args.stage)
    if args.stage is not None:
        raise UserError(f"{args.command}: give a stage or --project DIR, not both")
    return project_stage(project)


def project_stage(project: str) -> stages.Stage:
    """The project in folder `project`, its description checked."""
    folder = Path(nonempty(project, "--project"))
    if not folder.is_dir():
        raise UserError(f"--project {project}: not a folder")
    folder = folder.resolve()  # a path, never a stage's name: ./03 is the folder, not stage 03
    description.read(folder)  # its own errors, each naming its key
    return stages.resolve(str(folder))


def stage_and_scenario(args) -> tuple[stages.Stage, Scenario]:
    """`STAGE --scenario NAME [--replicas N] [--seed N]` of run, step and explore: one track."""
    stage = stage_of(args)
    scenario = scenarios.resolve(args.scenario or registry.track(stage.track).default_scenario,
                          stage.track)
    if scenario.track != stage.track:
        raise UserError(f"scenario {scenario.name!r} is for the {scenario.track} track; "
                        f"stage {stage.id} is on the {stage.track} track")
    if (fit := registry.track(stage.track).fit) is not None:  # an app with its own slots
        scenario = fit(stage, scenario)
    if args.replicas:
        scenario = scenario.with_replicas(args.replicas)
    if getattr(args, "seed", None) is not None:
        scenario = scenario.with_seed(args.seed)
    return stage, scenario


def schedule(text: str | None) -> Stepper | None:
    """`run --schedule STRING`: a stepper that replays it, checked before the run."""
    return None if text is None else Stepper(replay.Schedule(replay.parse_schedule(text)))
