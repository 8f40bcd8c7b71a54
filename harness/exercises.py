"""The workshop's exercises: a scratch copy of a stage that attendees edit, and its self-check.

`python -m harness.exercises start|check|reset|solve NN` (the Makefile's exercise targets), and
`python -m harness.exercises preflight` (`make preflight`: the morning of a workshop).
Each exercise is a folder `exercises/NN-name/` with a README.md, a solution.patch and a
check.toml naming the stage it starts from and the cells the check wants:

    start = "03-claim-row"
    [[want]]
    scenario = "simultaneous"   # a canonical scenario, or a FILE.toml in the exercise folder
    cell = "1"              # the matrix cell, as `racelab matrix` prints it
    claim_lost = 2          # optional: ticks whose claim INSERT got no row back
    lock_refused = 0        # optional: ticks whose advisory lock came back false
    raises = ["LookupError"]  # optional: errors a tick may end with (the exercise's point);
                            # any other error fails the check and is shown (FILE:LINE: message)
    aborted = 2             # optional: transactions PostgreSQL aborted (serialization failure)
    not_retried = 0         # optional: of those, the ones whose tick ended with the error
    isolation = "serializable"  # optional: the run's isolation level (default read-committed)

The scratch copy lives in exercises/scratch/ (ignored by git), never in the shipped stages; the
check runs the wanted scenarios on it through the lab and compares what the records show.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from harness import writes
from harness.engine.model import axes, scenario, stages
from harness.engine.model.history import ABORTS
from harness.engine.run import runner
from harness.engine.views import tables
from harness.errors import UserError
from harness.infra import doctor

EXERCISES = stages.ROOT / "exercises"
# where attendees' copies live; the tests point it elsewhere so they never touch real edits
SCRATCH = Path(os.environ.get("RACELAB_EXERCISES_SCRATCH") or EXERCISES / "scratch")
EVENT_COUNTS = {"claim_lost": ("claim", "false"), "lock_refused": ("lock", "false")}
RUN_COUNTS = {"aborted": lambda r: r.aborted, "not_retried": lambda r: r.not_retried}
COUNTS = (*EVENT_COUNTS, *RUN_COUNTS)


@dataclass(frozen=True)
class Want:
    scenario: str
    cell: str
    counts: dict[str, int]  # of COUNTS' names
    isolation: str | None = None  # the run's level (None: the axis's default)
    raises: tuple[str, ...] = ()  # the error classes a tick may end with, as the exercise asks

    def __str__(self) -> str:
        return self.scenario.removesuffix(".toml") + (f" at {self.isolation}"
                                                      if self.isolation else "")


@dataclass(frozen=True)
class Exercise:
    folder: Path
    start: stages.Stage
    wants: tuple[Want, ...]

    @property
    def name(self) -> str:
        return self.folder.name

    def scratch(self, root: Path = SCRATCH) -> Path:
        return root / self.name


# a tick may always end with these: the scenario's own injected crash, PostgreSQL's aborts
EXPECTED_ERRORS = ("InjectedCrash",)


@dataclass(frozen=True)
class Measured:
    want: Want
    cell: str
    counts: dict[str, int]
    errors: tuple[str, ...] = ()  # ticks that raised what the exercise did not ask for

    @property
    def ok(self) -> bool:
        return (self.cell == self.want.cell and self.counts == self.want.counts
                and not self.errors)

    def describe(self, show: bool = True) -> str:
        """The measured cell (and counts); what the exercise wants when they differ and `show`;
        each unexpected error on a line of its own."""
        got = " · ".join([self.cell, *(f"{k.replace('_', ' ')} {v}"
                                       for k, v in self.counts.items())])
        wanted = " · ".join([self.want.cell, *(f"{k.replace('_', ' ')} {v}"
                                               for k, v in self.want.counts.items())])
        differs = self.cell != self.want.cell or self.counts != self.want.counts
        line = f"{self.want}: {got}" + (f"   (the exercise wants {wanted})"
                                          if differs and show else "")
        return "\n".join([line, *(f"    a tick raised an error: {e}" for e in self.errors)])


def all_exercises() -> list[Exercise]:
    return [load(p) for p in sorted(EXERCISES.glob("[0-9][0-9]-*")) if p.is_dir()]


def find(number: str) -> Exercise:
    """`01`, `1` or `01-session-lock`."""
    for ex in all_exercises():
        if number in (ex.name, ex.name[:2]) or (number.isdigit() and int(number) ==
                                                int(ex.name[:2])):
            return ex
    known = ", ".join(ex.name for ex in all_exercises())
    raise UserError(f"unknown exercise {number!r}; known exercises: {known}")


def load(folder: Path) -> Exercise:
    path = folder / "check.toml"
    try:
        data = tomllib.loads(path.read_text())
        wants = tuple(
            Want(w["scenario"], str(w["cell"]),
                 {k: int(w[k]) for k in COUNTS if k in w}, w.get("isolation"),
                 tuple(str(r) for r in w.get("raises", ())))
            for w in data["want"])
        return Exercise(folder, stages.resolve(data["start"]), wants)
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError) as e:
        raise UserError(f"{path}: not a valid exercise check ({type(e).__name__}: {e})") from None


def start(ex: Exercise, root: Path = SCRATCH) -> tuple[Path, bool]:
    """Copy the starting stage into the scratch folder unless it is there already (the
    attendee's edits are kept); True when it was copied now."""
    target = ex.scratch(root)
    if target.exists() and not target.is_symlink():
        return target, False
    writes.copy_folder(ex.start.path, target,  # whole or not at all; never through a symlink
                       lambda tmp: (tmp / stages.FROM_FILE).write_text(ex.start.folder + "\n"))
    return target, True


def reset(ex: Exercise, root: Path = SCRATCH) -> Path:
    """The starting stage copied again, whole or not at all: the old copy is moved aside in
    one rename, the new one copied, and only then the old one removed (a file that cannot be
    removed stays in the aside folder, which `reset_leftover` names; the copy is whole)."""
    target = ex.scratch(root)
    if target.is_symlink():
        raise UserError(f"{target}: it is a symlink; racelab never removes through one")
    if not target.exists():
        return start(ex, root)[0]
    aside = target.with_name(f".{target.name}.old-{os.getpid()}")
    try:
        os.rename(target, aside)
    except OSError as e:
        raise UserError(f"{target}: cannot move it aside to start over ({e.strerror}); "
                        "nothing was changed") from None
    try:
        start(ex, root)
    except BaseException:
        os.rename(aside, target)  # the attendee's copy back, as it was
        raise
    shutil.rmtree(aside, ignore_errors=True)
    return target


def reset_leftover(ex: Exercise, root: Path = SCRATCH) -> list[Path]:
    """Old copies a reset could not remove entirely (their files are the attendee's)."""
    return sorted(ex.scratch(root).parent.glob(f".{ex.name}.old-*"))


def solve(ex: Exercise, root: Path = SCRATCH) -> Path:
    """Apply solution.patch to the scratch folder (copied first if missing)."""
    target, _ = start(ex, root)
    patch = ex.folder / "solution.patch"
    if _git_apply(target, patch, "--reverse", "--check").returncode == 0:
        raise UserError(f"{patch} is already applied to {target}")
    done = _git_apply(target, patch)
    if done.returncode:
        first = (done.stderr.strip().splitlines() or ["git apply failed"])[0]
        raise UserError(f"{patch} does not apply to {target} ({first}); "
                        f"make reset-exercise-{ex.name[:2]} starts over")
    return target


def _git_apply(target: Path, patch: Path, *options: str) -> subprocess.CompletedProcess:
    """git apply as a plain `patch` (run outside any repository), paths under target."""
    try:
        return subprocess.run(["git", "apply", "--unsafe-paths", f"--directory={target}",
                               *options, str(patch)], capture_output=True, text=True, cwd="/")
    except FileNotFoundError:
        raise UserError("git is needed to apply the solution (it is not on PATH)") from None


def check(ex: Exercise, root: Path = SCRATCH) -> list[Measured]:
    """Run each wanted scenario on the scratch folder and measure what the records show."""
    target = ex.scratch(root)
    if not target.exists():
        raise UserError(f"{target} does not exist yet: make exercise-{ex.name[:2]} copies "
                        f"{ex.start.folder} there")
    stage = stages.from_folder(target)
    measured = []
    for want in ex.wants:
        own = ex.folder / want.scenario  # a scenario file of the exercise's own
        named = str(own) if want.scenario.endswith(".toml") and own.is_file() else want.scenario
        settings = axes.parse(None) if want.isolation is None else axes.parse(
            [f"isolation={want.isolation}"])
        result = runner.run(stage, scenario.resolve(named, stage.track), settings=settings)
        counts = {k: RUN_COUNTS[k](result) if k in RUN_COUNTS else
                  sum(1 for e in result.events if (e.event, e.detail) == EVENT_COUNTS[k])
                  for k in want.counts}
        measured.append(Measured(want, tables.cell(result).plain, counts,
                                 unexpected_errors(result, want)))
    return measured


def unexpected_errors(result, want: Want) -> tuple[str, ...]:
    """Each tick's error the exercise did not ask for, as 'B: FILE:LINE: TypeError: …': a
    crash is not the miss or the refusal an exercise wants, whatever the cell says."""
    out = []
    printed: dict[str, list[str]] = {}  # what each task printed (its stderr too), in order
    for e in result.events:
        if e.event == "output":
            printed.setdefault(e.replica, []).append(e.detail)
        if e.event == "exit" and e.detail != "0":  # a task's own error: what it printed last
            said = printed.get(e.replica, [])[-1:] or ["(it printed nothing)"]
            out.append(f"{e.replica} exited {e.detail}: {said[0]}")
        if e.event not in ("error", "commit-failed") or "error" not in e.data:
            continue
        if (e.data["error"] in (*want.raises, *EXPECTED_ERRORS)
                or e.data.get("sqlstate") in ABORTS):
            continue
        where = f"{e.data['where']}: " if e.data.get("where") else ""
        out.append(f"{e.replica}: {where}{e.detail}")
    return tuple(dict.fromkeys(out))


def changed(ex: Exercise, root: Path = SCRATCH) -> bool:
    """Whether the attendee's copy differs from the stage it started from (its code: the
    README and caches aside)."""
    return not same_tree(ex.start.path, ex.scratch(root))


def same_tree(shipped: Path, copy: Path) -> bool:
    """The copy holds the shipped stage's files, byte for byte, plus its .racelab-from."""
    cmp = filecmp.dircmp(shipped, copy, ignore=["__pycache__", "README.md", stages.FROM_FILE])

    def same(c: filecmp.dircmp) -> bool:
        _, mismatch, errors = filecmp.cmpfiles(c.left, c.right, c.common_files, shallow=False)
        return (not c.left_only and not c.right_only and not mismatch and not errors
                and all(same(sub) for sub in c.subdirs.values()))
    return same(cmp)


# -- the morning of a workshop ------------------------------------------------------------------

RUN_WITHIN_S = 10.0  # a stage's row shows in a few seconds: slower, and the room waits on it


def preflight() -> list[tuple[bool, str]]:
    """`make preflight`, a workshop's morning: each check's outcome and its line, in the order
    they ran: the services answer, one run of 03 comes back within seconds, and no exercise
    copy holds yesterday's edits. The run is skipped when a service is missing."""
    found, problems = doctor.report()
    out = [(True, line) for line in found] + [(False, f"{p}") for p in problems]
    if not problems:
        out.append(_one_run(float(os.environ.get("RACELAB_PREFLIGHT_WITHIN_S", RUN_WITHIN_S))))
    out += _copies()
    return out


def _one_run(within_s: float) -> tuple[bool, str]:
    started = time.perf_counter()
    result = runner.run(stages.resolve("03"), scenario.resolve("staggered", "cron"))
    took = time.perf_counter() - started
    paid = result.verdict.runs
    line = (f"racelab run 03 --scenario staggered: paid {paid} time{'s' * (paid != 1)} in "
            f"{took:.1f} s (the lab pays 1, within {within_s:g} s)")
    if paid != 1:
        return False, f"{line}: stage 03 was changed? `git status 03-claim-row` shows how"
    if took > within_s:
        return False, (f"{line}: this laptop is slow today; close what else runs, or plan "
                       "for the demo's matrices to take longer")
    return True, line


def _copies() -> list[tuple[bool, str]]:
    """An exercise copy that differs from its starting stage, or an old copy a reset set
    aside, is yesterday's: the attendee would start from someone else's edits."""
    out = []
    for ex in all_exercises():
        copy = ex.scratch()
        if copy.exists() and changed(ex):
            out.append((False, f"exercise {ex.name}: {rel(copy)} holds edits: "
                               f"make reset-exercise-{ex.name[:2]}"))
        for old in reset_leftover(ex):
            out.append((False, f"exercise {ex.name}: {rel(old)} is an old copy a "
                               f"reset set aside: remove it (rm -rf)"))
    if not out:
        out.append((True, "exercise copies: none with edits (each `make exercise-NN` makes "
                          "a fresh one)"))
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        show = args[2:] == ["--show"] and args[:1] == ["check"]
        if show:
            args = args[:2]
        if args == ["preflight"]:
            results = preflight()
            for ok, line in results:
                print(f"{'✓' if ok else '✗'} {line}")
            bad = sum(not ok for ok, _ in results)
            print("ready for the workshop" if not bad else f"{bad} check{'s' * (bad != 1)} to "
                  "fix before the room arrives")
            return 1 if bad else 0
        if len(args) != 2 or args[0] not in ("start", "check", "reset", "solve"):
            raise UserError("usage: python -m harness.exercises start|check|reset|solve NN "
                            "(check NN --show: also what the exercise wants), or preflight")
        ex = find(args[1])
        if args[0] == "start":
            target, copied = start(ex)
            print(f"{'copied' if copied else 'kept your edits in'} {rel(target)} "
                  f"(from {ex.start.folder}); task: {rel(ex.folder / 'README.md')}")
        elif args[0] == "reset":
            print(f"{rel(reset(ex))} is {ex.start.folder} again")
            for old in reset_leftover(ex):
                print(f"racelab: your previous copy could not be removed entirely: {rel(old)} "
                      "is left for you to remove", file=sys.stderr)
        elif args[0] == "solve":
            print(f"applied {rel(ex.folder / 'solution.patch')} to {rel(solve(ex))}")
        else:
            results = check(ex)
            edited = changed(ex)
            print(f"exercise {ex.name} on {rel(ex.scratch())} (started from {ex.start.folder})")
            for m in results:  # what it wants only once the copy changed: predict first
                print("  " + m.describe(show or edited).replace("\n", "\n  "))
            passed = all(m.ok for m in results)
            if not passed and not edited and not show:
                print(f"not yet: your copy is still {ex.start.folder}. Write down your "
                      "prediction, make the change the task asks for, then check again (what "
                      "the exercise wants shows once your copy differs, or with --show)")
            else:
                print("pass" if passed else "not yet")
            return 0 if passed else 1  # a script or a CI step can tell "not yet" from "pass"
        return 0
    except UserError as e:
        print(f"racelab: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug of the lab's own: one line, as racelab's CLI says it
        print(f"racelab: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


def rel(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())
