"""racelab's command line. Exit codes: 0 the run completed (duplicates are findings),
2 bad input or no services, 1 an internal error."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import traceback
from pathlib import Path

from rich.console import Console

from harness import interrupts, writes
from harness.cli import options, output, progress, step, usage
from harness.engine.explore.steps import Diverged
from harness.engine.explore.strategy import RACE_TRIES
from harness.engine.model import axes, registry, stages
from harness.engine.model import scenario as scenarios
from harness.engine.model.faults import kind_of
from harness.engine.run import cells, runner
from harness.engine.run.fleet import STOP
from harness.engine.run.interleave import HOLD_BEFORE_COMMIT
from harness.engine.views import fit, report_page, run_views, tables
from harness.errors import UserError, did_you_mean
from harness.infra import services
from harness.infra.lost import lost

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE = 0, 1, 2
FORCE = "overwrite a file there that racelab did not write"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, as for every other bad input
        where = self.prog.removeprefix("racelab").strip()  # main adds "racelab: "
        if m := re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message):
            message += did_you_mean(m.group(1), re.findall(r"'([^']*)'", m.group(2)))
        raise UserError(f"{where}: {message}" if where else message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="racelab", description="A reproducible race-condition lab.")
    p.add_argument("--version", action=usage.Version)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("run", help="run one stage under one scenario")
    r.add_argument("stage", nargs="?", help=f"a stage ({usage.stage_list()}), its folder name, "
                   "or the path of a copied stage folder (its .racelab-from names where it "
                   "started)")
    options.add_project(r)
    r.add_argument("--scenario", default=None,
                   help="a canonical scenario name, a FILE.toml or a FILE.json")
    r.add_argument("--replicas", type=options.replicas,
                   help="override the scenario's replica count (1 to 64)")
    r.add_argument("--seed", type=options.seed, help="override the scenario's seed")
    axes.add_options(r)
    if registry.axes():
        r.add_argument("--set", action="append", metavar="AXIS=VALUE",
                       help="make the run with this value of a run axis (repeatable): "
                       + "; ".join(f"{a.name} ({', '.join(a.values)}), {a.help}"
                                   for a in registry.axes().values()))
    r.add_argument("--schedule", metavar="STRING", help="move same-instant replicas a statement "
                   "at a time in this order, as `racelab step` or `explore` printed it")
    r.add_argument("--keep", action="store_true", help="keep its database (until clean --kept)")
    r.add_argument("--force", action="store_true", help=FORCE)
    options.add_view_options(r, registry.views().values())

    m = sub.add_parser("matrix", help="every stage × every canonical scenario, one matrix a track")
    tracks = [name for name, track in registry.tracks().items() if track.stage_dir is not None]
    m.add_argument("--track", choices=tracks, action="append",
                   help=f"the track to run (repeatable: one matrix each; default {tracks[0]})")
    m.add_argument("--stage", action="append", help="only these stages (repeatable)")
    options.add_project(m)
    axes.add_options(m, matrix=True)
    m.add_argument("--json", action="store_true", help="print one JSON list, a cell per run")
    m.add_argument("--svg", metavar="FILE", help="also save the printed matrix as SVG")
    m.add_argument("--force", action="store_true", help=FORCE)

    h = sub.add_parser("report", help="one offline page: every matrix, each cell its picture")
    h.add_argument("--html", metavar="DIR", required=True, help="folder to write index.html in")
    h.add_argument("--stage", action="append", help="only these stages (repeatable)")
    h.add_argument("--force", action="store_true", help=FORCE)

    s = sub.add_parser("scenarios", help="the canonical scenarios, one line each")
    s.add_argument("--json", action="store_true", help="print one JSON list")

    sub.add_parser("services", help="which PostgreSQL and Redis a run would use")

    c = sub.add_parser("clean", help="remove what dead runs of racelab left, and nothing else")
    c.add_argument("--all", action="store_true", help="also what runs still going use")
    c.add_argument("--kept", action="store_true", help="also the databases of run --keep")

    b = sub.add_parser("bench", help="throughput and scaling figures, as ratios within one run")
    b.add_argument("--json", action="store_true", help="print one JSON object")
    b.add_argument("--quick", action="store_true", help="less of each, for tests")

    f = sub.add_parser("find-race", help="search scenarios for a duplicate, shrink it, print it")
    f.add_argument("stage", nargs="?", help="a cron-track stage: 00 … 05")
    options.add_project(f)
    f.add_argument("--max-examples", type=options.positive, default=100,
                   help="scenarios to try before shrinking (default 100)")
    f.add_argument("--out", metavar="FILE", help="where to write the shrunk scenario "
                   "(default ./race-STAGE.toml; with --json only when given)")
    axes.add_options(f)
    f.add_argument("--json", action="store_true", help="print one JSON object")
    f.add_argument("--force", action="store_true", help=FORCE)
    step.add_parsers(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    interrupts.install(STOP.set)  # a run stops at its next instant, even when the
    args = None  # KeyboardInterrupt itself was lost in a finaliser (a pool's __del__)
    STOP.clear()  # a command of its own, though an earlier one in this process stopped its runs
    try:
        parser = build_parser()
        if not (sys.argv[1:] if argv is None else argv):  # bare `racelab`: what it can do
            return usage.bare(parser)
        args = parser.parse_args(argv)
        code = COMMANDS[args.command](args)
        if interrupts.fired():  # it came and something swallowed it: still interrupted
            raise KeyboardInterrupt
        return code
    except UserError as e:
        return _fail(args, str(e), EXIT_USAGE)
    except KeyboardInterrupt:
        return _interrupted()
    except BrokenPipeError:  # `racelab … | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as e:  # a service gone mid-run, or a bug of the lab's own
        if interrupts.fired() and _cut_by_interrupt(e):  # psycopg raises an OperationalError
            return _interrupted()  # when Ctrl-C lands as its pipeline ends: still interrupted
        if line := lost(e):
            return _fail(args, line, EXIT_USAGE)
        if os.environ.get("RACELAB_DEBUG"):
            traceback.print_exc()
        return _fail(args, f"internal error: {type(e).__name__}: {e} "
                     "(set RACELAB_DEBUG=1 for the traceback)", EXIT_INTERNAL)
    finally:
        interrupts.settle()  # the command is over: a late Ctrl-C must not cut the cleanup


def _cut_by_interrupt(e: BaseException) -> bool:
    """Whether `e` was raised while a KeyboardInterrupt was being handled (its cause or
    context, at any depth)."""
    todo, seen = [e], set()
    while todo:
        e = todo.pop()
        if isinstance(e, KeyboardInterrupt):
            return True
        if e is not None and id(e) not in seen:
            seen.add(id(e))
            todo += [e.__cause__, e.__context__]
    return False


def _interrupted() -> int:
    """Exit 130 with one line that says what was left, once the run's databases are dropped
    (the replicas stopped as the interrupt unwound the run)."""
    from harness.infra import rundb

    left = rundb.drop_all()
    print("racelab: interrupted; nothing of the run is left" if not left else
          f"racelab: interrupted; PostgreSQL would not drop {', '.join(left)} (racelab clean "
          "drops it)", file=sys.stderr)
    return 130


def _fail(args, line: str, code: int) -> int:
    """One line on stderr; with --json also {"error": line} on stdout, so it stays JSON."""
    print(f"racelab: {line}", file=sys.stderr)
    if getattr(args, "json", False) or getattr(args, "view:json", False):  # run's is a view
        print(json.dumps({"error": line}))
    return code


def cmd_run(args) -> int:
    stage, scenario = options.stage_and_scenario(args)
    stepper = options.schedule(args.schedule)
    settings = axes.parse(getattr(args, "set", None), args)
    views = list(registry.views().values())
    files = options.view_files(args, views)
    printed = run_views.printed(views, {v.name for v in views if options.view_value(args, v)})
    progress.warn_if_long(scenario)
    console = output.console()
    with progress.live(scenario, console, show=not any(v.alone for v in printed)) as on_instant:
        for tries in range(1, RACE_TRIES + 1):  # a replay whose race between waiters went
            try:                                # another way is played again (PostgreSQL's pick)
                result = runner.run(stage, scenario, keep=args.keep, on_instant=on_instant,
                                    interleaver=HOLD_BEFORE_COMMIT if stepper is None else stepper,
                                    settings=settings,
                                    states=run_views.reads_states([*printed, *files]))
                break
            except Diverged as e:
                if tries == RACE_TRIES:
                    raise UserError(f"--schedule: not replayed in {RACE_TRIES} runs: {e}") from None
                stepper = options.schedule(args.schedule)
    if stepper is not None and stepper.chooser.left:
        raise UserError(f"--schedule: {stepper.chooser.left} step(s) more than the run took "
                        f"(it played {stepper.schedule()!r})")
    if stepper is not None:
        result.schedule = stepper.schedule()
    for f, why in result.never_applied:  # the run's numbers are without it: say so
        print(f"racelab: warning: {kind_of(f).describe(f)} never applied: {why}",
              file=sys.stderr)
    for view, target in files.items():
        view.write(result, target)
    for view in printed:
        view.write(result, console)
    if any(v.alone for v in printed):
        return EXIT_OK
    if result.schedule is not None:
        console.print(f"schedule played: {result.schedule}")
    if args.keep:
        console.print(f"kept database {result.database}")
    return EXIT_OK


def cmd_matrix(args) -> int:
    plan = options.matrix_plan(args.stage, args.track, next(iter(registry.tracks())),
                               args.project)
    svg = writes.Target(args.svg, "--svg", args.force) if args.svg else None
    console = output.console(args.svg)
    results = _run_cells(console, plan, axes.chosen(args), states=False)
    if args.json:
        print(json.dumps([r.to_json(with_events=False) for r in results]))
        return EXIT_OK
    for track, chosen in plan.items():
        names = ", ".join(s.id for s in chosen)
        mine = [r for r in results if r.stage.track == track]
        title = tables.matrix_title(mine, f"racelab matrix · {track} track · stages {names}")
        for part in fit.matrix(mine, title, console.width):  # scenarios as rows when narrow
            console.print(part)
    output.save(console, svg, "racelab matrix")
    return EXIT_OK


def _run_cells(console: Console, plan: dict[str, list[stages.Stage]],
               values: dict[str, tuple[str, ...]] | None = None, states: bool = True) -> list:
    """Every canonical scenario of each track of the plan that applies, on each of its stages,
    at each value of an axis with a default that `values` asks for (else at its default), the
    tracks' cells in one pool (their tails overlap); `states`: for the pictures of the report's
    page (a matrix shows counts only)."""
    chosen_cells = [c for track, chosen in plan.items() for c in cells.of(track, chosen, values)]
    with console.status("") as status:  # shown on a terminal only; gone once the table prints
        return cells.run_all(chosen_cells, lambda done, cell: status.update(
            f"{done} of {len(chosen_cells)} cells done; waiting for {cell.stage.name} × "
            f"{' '.join([cell.scenario.name, axes.words(cell.settings)]).strip()}"), states)


def cmd_report(args) -> int:
    html = report_page.target(Path(options.nonempty(args.html, "--html")), args.force)
    plan, notes = options.report_stages(args.stage)  # before any run: what can run here
    for note in notes:
        print(f"racelab: report: {note}", file=sys.stderr)
    results = _run_cells(output.console(), plan)
    print(f"wrote {report_page.write(html, results, notes)}")
    return EXIT_OK


def cmd_scenarios(args) -> int:
    found = scenarios.canonical()
    if args.json:
        print(json.dumps([{"name": s.name, "track": s.track, "replicas": s.replicas,
                           "description": s.description} for s in found]))
        return EXIT_OK
    console = output.console()
    width = max(len(s.name) for s in found)
    track_width = max(len(s.track) for s in found)
    for s in found:
        console.print(f"[bold]{s.name:<{width}}[/]  [dim]{s.track:<{track_width}}[/] "
                      f"{s.description}")
    return EXIT_OK


def cmd_services(args) -> int:
    """Each service found on stdout; each one missing as one line on stderr, and exit 2."""
    from harness.infra import doctor

    found, problems = doctor.report()
    for line in found:
        print(line)
    for problem in problems:
        print(f"racelab: {problem}", file=sys.stderr)
    return EXIT_USAGE if problems else EXIT_OK


def cmd_clean(args) -> int:
    from harness.infra import leftovers

    removed, kept = leftovers.clean(services.postgres().url, everything=args.all, kept=args.kept)
    for line in removed:
        print(f"removed {line}")
    for name in kept:
        print(f"kept database {name} (run --keep; clean --kept removes it)")
    if not removed and not kept:
        print("nothing left behind")
    return EXIT_OK


def cmd_bench(args) -> int:
    from harness import bench

    data = bench.measure(quick=args.quick)
    if args.json:
        print(json.dumps(data))
        return EXIT_OK
    output.console().print(bench.table(data))
    return EXIT_OK


def cmd_find_race(args) -> int:
    stage = options.stage_of(args)
    search = registry.track(stage.track).find_race
    if search is None:
        searchable = " and ".join(t.name for t in registry.tracks().values() if t.find_race)
        raise UserError(f"find-race searches the {searchable} track"
                        f"{'s' if ' and ' in searchable else ''}; stage {stage.id} is on the "
                        f"{stage.track} track")
    out = args.out or f"race-{stage.id}.toml"
    target = writes.Target(out, "--out", args.force) if args.out or not args.json else None
    found = search(stage, args.max_examples, axes.parse(None, args))
    if found.found and target:
        target.write(scenarios.to_toml(found.scenario))
    if args.json:
        print(json.dumps(found.to_json()))
        return EXIT_OK
    console = output.console()
    rate = found.examples / found.seconds if found.seconds else 0.0
    tried = f"{found.examples} scenarios in {found.seconds:.0f}s ({rate:.1f}/s)"
    if not found.found:
        promise = ("each effect as its slot expects it, no slot missed where no fault struck"
                   if stage.track == "project" else "each slot paid once, nothing payable missed")
        console.print(f"[green]nothing found[/]: stage {stage.id} kept its promise ({promise}) "
                      f"in {tried}, --max-examples {args.max_examples}")
        return EXIT_OK
    text = scenarios.to_toml(found.scenario)
    console.print(f"[bold red]found[/]: {'; '.join(found.broken)} ({tried}, shrunk)")
    console.print(f"wrote {out}; run it again with: {output.me()} run {stages.named(stage)} "
                  f"--scenario {out}")
    console.print()
    console.print(text, markup=False, highlight=False)
    run_views.table(console, found.result)
    console.print()
    for line in fit.timeline(found.result,
                              console.width if console.is_terminal else None):
        console.print(line)
    return EXIT_OK


COMMANDS = {"bench": cmd_bench, "run": cmd_run, "matrix": cmd_matrix, "scenarios": cmd_scenarios,
            "services": cmd_services, "clean": cmd_clean, "find-race": cmd_find_race,
            "report": cmd_report, **step.COMMANDS}
