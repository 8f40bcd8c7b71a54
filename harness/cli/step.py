"""`racelab step` (you choose who moves next) and `racelab explore` (every schedule up to a bound),
on the step mode of harness.engine.explore.steps."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.text import Text

from harness.cli import options, output
from harness.engine.explore import outcomes, strategy
from harness.engine.explore.person import Person
from harness.engine.explore.steps import Stepper
from harness.engine.model import axes, registry
from harness.engine.model.history import F, Op, Type
from harness.engine.model.tracks import RUN_WORD
from harness.engine.run import runner
from harness.engine.views import run_views
from harness.engine.views.picture_words import op_label
from harness.errors import UserError

STAGE_HELP = "a stage id (00, 02, alerts-01, …) or the path of a stage folder"


def add_parsers(sub) -> None:
    st = sub.add_parser("step", help="you choose who moves next among same-instant replicas, "
                        "a statement at a time")
    st.add_argument("stage", nargs="?", help=STAGE_HELP)
    options.add_project(st)
    st.add_argument("--scenario", default=None, help="a canonical scenario name or a FILE")
    st.add_argument("--replicas", type=options.replicas, help="override the replica count")
    axes.add_options(st)
    options.add_view_options(st, registry.views().values(), files_only=True)
    st.add_argument("--force", action="store_true", help="overwrite a file racelab did not write")

    ex = sub.add_parser("explore", help="the schedules a strategy picks (by default every one "
                        "up to a bound on preemptions): the outcomes, the shortest bad one")
    ex.add_argument("stage", nargs="?", help=STAGE_HELP)
    options.add_project(ex)
    ex.add_argument("--scenario", default=None, help="a canonical scenario name or a FILE "
                    "(default simultaneous)")
    ex.add_argument("--replicas", type=options.replicas, help="override the replica count")
    axes.add_options(ex)
    kinds = registry.strategies()
    first = next(iter(kinds))
    ex.add_argument("--strategy", choices=list(kinds), default=first,
                    help=f"how the schedules are picked (default {first}): "
                    + "; ".join(f"{k.name}, {k.help}" for k in kinds.values()))
    ex.add_argument("--merge", nargs="+", metavar="FILE", help="the --json files of every share: "
                    "print them as one exploration")
    ex.add_argument("--json", action="store_true", help="print one JSON object")
    for kind in kinds.values():  # each strategy's own options, last
        group = ex.add_argument_group(f"--strategy {kind.name}")
        try:
            kind.add_options(group)
        except argparse.ArgumentError as e:
            raise UserError(f"the strategy {kind.name!r} declares an option explore already "
                            f"has ({e.argument_name}): give it another name") from None
        _OPTIONS[kind.name] = list(group._group_actions)


_OPTIONS: dict[str, list[argparse.Action]] = {}  # each strategy's own options


def _only_its_options(args) -> None:
    """An option of a strategy other than the one chosen is refused, never silently unused."""
    borrowed = registry.BORROWS.of(registry.strategies()[args.strategy])
    for name, actions in _OPTIONS.items():
        for action in actions:
            if name != args.strategy and action.dest not in borrowed \
                    and getattr(args, action.dest) != action.default:
                raise UserError(f"explore: {action.option_strings[0]} is an option of "
                                f"--strategy {name}, not of {args.strategy}")


def _said(words: dict[str, str]):
    """What a step's ops came to, as the run's picture words them ("lock ✗", "claim … ✓",
    "summary thread absent", "COMMIT"); "" when its statement decided nothing the lab
    watches (a plain SELECT, a write)."""
    def said(ops: tuple) -> str:
        found = []
        for at, type_, f, value, *_ in ops:
            op = Op("", Type(type_), F(f), datetime.min, value, at)  # its time is not shown
            if (label := op_label(op, [], words)) is not None:
                found.append(label[1])
        return " · ".join(found)
    return said


def cmd_step(args) -> int:
    args.scenario = args.scenario or "simultaneous"  # an instant with a choice, as explore's
    stage, sc = options.stage_and_scenario(args)
    files = options.view_files(args, registry.views().values())
    console = output.console()
    person = Person(console, sys.stdin.isatty() and console.is_terminal,
                    _said(registry.track(stage.track).report.LABELS))
    stepper = Stepper(person)
    word = RUN_WORD.of(registry.track(stage.track).report)
    console.print(f"goal: get one {word} to land twice, or find that no order you choose can "
                  f"(replicas at one instant; you say who moves next)", style="bold")
    settings = axes.parse(None, args)
    result = runner.run(stage, sc, interleaver=stepper, settings=settings)
    result.schedule = stepper.schedule()  # a person's order: not the matrix cell's (no marks)
    if rest := person.left():
        raise UserError(f"step: the input goes on after the run's last step ({len(rest)} more: "
                        f"{rest[:20]!r}); it played {stepper.schedule()!r}")
    if not stepper.steps:
        console.print(f"no instant of {sc.name} has two replicas starting together: there was "
                      "nothing to choose", style="yellow")
    console.print()
    run_views.run_result(console, result, timeline=True)
    for view, target in files.items():
        view.write(result, target)
    schedule = stepper.schedule()
    console.print(f"schedule played: {schedule}")
    replicas = f" --replicas {args.replicas}" if args.replicas else ""
    replicas += axes.options(settings)
    what = args.stage or f"--project {shlex.quote(args.project)}"
    console.print(f"replay it: {output.me()} run {what} --scenario {args.scenario or sc.name}"
                  f"{replicas} --schedule '{schedule}'", markup=False)
    return 0


def cmd_explore(args) -> int:
    if args.merge:
        if args.stage is not None or args.project is not None:
            raise UserError("explore --merge FILES takes no stage or project: the files name it")
        data = outcomes.merge([_read_share(p) for p in args.merge])
    else:
        if args.stage is None and args.project is None:
            raise UserError("explore: which stage? give STAGE (e.g. 03), --project DIR or "
                            "--merge FILES")
        args.scenario = args.scenario or "simultaneous"
        stage, sc = options.stage_and_scenario(args)
        console = output.console()
        _only_its_options(args)
        kind = registry.strategies()[args.strategy]
        with console.status("") as status:
            found = strategy.explore(stage, sc, kind.new(args), kind.name,
                                     lambda e: status.update(_progress(e)),
                                     settings=axes.parse(None, args))
        data = found.to_json()
    if args.json:
        print(json.dumps(data))
    else:
        _print(output.console(), data, bool(args.merge))
    return 130 if not data["complete"] and not args.merge else 0


def _read_share(path: str) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UserError(f"--merge {path}: not the JSON of explore --json ({e})") from None
    keys = ("stage", "scenario", "replicas", "strategy", "outcomes", "explored", "complete",
            "reruns", "unreached", "seconds")
    if not isinstance(data, dict) or any(k not in data for k in keys) or not (
            isinstance(data["explored"], list) and isinstance(data["outcomes"], list)):
        raise UserError(f"--merge {path}: not the JSON of explore --json")
    if data["strategy"] not in registry.strategies():
        raise UserError(f"--merge {path}: explored with the strategy {data['strategy']!r}, "
                        "which racelab does not have (a plugin's, not loaded?)")
    for o in data["outcomes"]:
        if not isinstance(o, dict) or any(k not in o for k in (
                "outcome", "bad", "failed", "schedules", "shortest", "shortest_preemptions")):
            raise UserError(f"--merge {path}: not the JSON of explore --json (an outcome)")
    if why := _share_differs(data):
        raise UserError(f"--merge {path}: not the JSON of explore --json ({why})")
    return data


def _whole(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _share_differs(data: dict) -> str:
    """What in a share does not hold together ("" when it does): its types, and its counts
    against its own list of schedules (a hand-edited share)."""
    part = data.get("partition")
    if part is not None and not (isinstance(part, list) and len(part) == 2 and all(
            _whole(x) for x in part) and 1 <= part[0] <= part[1]):
        return "partition is not [I, N] with 1 <= I <= N"
    if not all(isinstance(x, str) for x in data["explored"]):
        return "explored is not a list of schedules"
    outcomes = data["outcomes"]
    if not all(isinstance(o["outcome"], str) and isinstance(o["bad"], bool)
               and isinstance(o["failed"], bool) and _whole(o["schedules"])
               and isinstance(o["shortest"], str) and _whole(o["shortest_preemptions"])
               for o in outcomes):
        return "an outcome's fields are not what explore writes"
    if "schedules" in data and data["schedules"] != len(data["explored"]):
        return f"schedules {data['schedules']!r} but {len(data['explored'])} explored"
    if sum(o["schedules"] for o in outcomes) != len(data["explored"]):
        return "its outcomes count other schedules than it explored"
    if not (isinstance(data["seconds"], (int, float)) and _whole(data["reruns"])
            and isinstance(data["unreached"], list) and isinstance(data["complete"], bool)):
        return "seconds, reruns, unreached or complete are not what explore writes"
    return ""


def _progress(e: outcomes.Exploration) -> str:
    rate = len(e.explored) / e.seconds if e.seconds else 0.0
    seen = " · ".join(f"{o.label}: {o.schedules}" for o in e.outcomes.values())
    return f"{len(e.explored)} schedules · {seen} · {rate:.1f}/s (Ctrl-C stops with the counts)"


def _print(console: Console, data: dict, merged: bool = False) -> None:
    kind = registry.strategies()[data["strategy"]]
    level = axes.titled(tuple(data.get("settings", {}).items()))
    replicas = f"{data['replicas']} replica{'s' * (data['replicas'] != 1)}"
    console.print(Text(f"{data['stage']} · {data['scenario']} · {level + ' · ' if level else ''}"
                       f"{replicas} · {kind.heading(data)}", style="bold"))
    done = "" if data["complete"] else " (interrupted: the counts so far)"
    console.print(f"{data['schedules']} schedules explored in {data['seconds']:.1f}s "
                  f"({data['schedules_per_s']:.1f}/s){done}")
    for o in data["outcomes"]:
        line = Text(f"  {o['outcome']}: {o['schedules']} schedules",
                    style="red" if o["bad"] else "yellow" if o["failed"] else "green")
        if o["bad"] or o["failed"]:
            line.append(f" · shortest: '{o['shortest']}' ({o['shortest_preemptions']} "
                        "preemptions)", style="default")
        console.print(line)
    if data.get("first_bad_at") is not None:
        among = "in the share that found one soonest" if merged else "in the order the runs ended"
        console.print(f"the first schedule with a duplicate or a miss was number "
                      f"{data['first_bad_at']} explored ({among})")
    if data["reruns"]:
        console.print(f"{data['reruns']} runs were repeated: a race between waiters went "
                      "another way than the schedule asked (PostgreSQL's pick)", style="dim")
    for branch in data["unreached"]:
        console.print(f"not reached in {strategy.RACE_TRIES} runs: {branch}", style="yellow")
    if not any(o["bad"] for o in data["outcomes"]) and data["complete"]:
        but = f", but for {len(data['unreached'])} not reached" if data["unreached"] else ""
        console.print(f"no schedule {kind.scope(data)} duplicates or misses{but}",
                      style="yellow" if but else "green")
    if data.get("shape_runs"):
        console.print(f"{data['shape_runs']} runs made to cut the tree fell to other shares (not "
                      "counted here)", style="dim")


COMMANDS = {"step": cmd_step, "explore": cmd_explore}
