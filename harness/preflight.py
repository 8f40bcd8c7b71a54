"""`make preflight`: a workshop's morning in one command. The services answer (found or
started as a run would), one run of the lab comes back within seconds, and no exercise's copy
still holds yesterday's edits or a reset's leftovers. One line per check, ✓ or ✗, and for each ✗
the one thing to do; exit 0 when every check holds, 1 when one does not."""

from __future__ import annotations

import os
import sys
import time

from harness import exercises
from harness.engine.model import scenario, stages
from harness.engine.run import runner
from harness.errors import UserError
from harness.infra import doctor

RUN_WITHIN_S = 10.0  # a stage's row shows in a few seconds: slower, and the room waits on it


def checks() -> list[tuple[bool, str]]:
    """Each check's outcome and its line, in the order they ran; the run is skipped when a
    service is missing (it would only fail the same way)."""
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
    for ex in exercises.all_exercises():
        copy = ex.scratch()
        if copy.exists() and exercises.changed(ex):
            out.append((False, f"exercise {ex.name}: {exercises.rel(copy)} holds edits: "
                               f"make reset-exercise-{ex.name[:2]}"))
        for old in exercises.reset_leftover(ex):
            out.append((False, f"exercise {ex.name}: {exercises.rel(old)} is an old copy a "
                               f"reset set aside: remove it (rm -rf)"))
    if not out:
        out.append((True, "exercise copies: none with edits (each `make exercise-NN` makes "
                          "a fresh one)"))
    return out


def main() -> int:
    try:
        results = checks()
    except UserError as e:  # a stage or scenario the lab ships is gone: one line, as racelab's
        print(f"✗ racelab: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    for ok, line in results:
        print(f"{'✓' if ok else '✗'} {line}")
    bad = sum(not ok for ok, _ in results)
    print("ready for the workshop" if not bad else f"{bad} check{'s' * (bad != 1)} to fix "
          "before the room arrives")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
