"""Step mode on real processes and a real PostgreSQL: a person as the scheduler (`step`), a
schedule replayed exactly (`run --schedule`), and every schedule up to a bound (`explore`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import (
    ROOT,
    copy_02_without_its_lock,
    left_by,
    model_schedules,
    one_line_exit_2,
    own_lock_keys,
    racelab_here,
    racelab_json,
    racelab_pid,
    statements_of,
)

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"  # `make thorough`


def _step(stage: str, typed: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", "step", stage, *args],
                          input=typed, capture_output=True, text=True, timeout=300, cwd=ROOT)


def _played(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("schedule played: "))
    return line.removeprefix("schedule played: ")


def _explore(stage: str, *args: str, env: dict | None = None) -> dict:
    data = racelab_json(racelab_here("explore", stage, "--json", *args, env=env))
    assert data["complete"]
    return data


def _outcomes(data: dict) -> dict[str, int]:
    return {o["outcome"]: o["schedules"] for o in data["outcomes"]}


def _copy_without_lock(tmp_path: Path, stage: str) -> Path:
    """A copy of `stage` whose advisory lock excludes no one."""
    folder = tmp_path / f"{stage}-own-keys"
    shutil.copytree(ROOT / stage, folder)
    (folder / ".racelab-from").write_text(stage + "\n")
    return own_lock_keys(folder)


def test_a_typed_schedule_plays_to_a_verdict_and_run_replays_it_to_the_same_counts(pg):
    """`printf 'A\\nB\\nB\\nA\\n' | racelab step 02 …`: four choices, the rest in order; the
    schedule it prints, given to `run --schedule`, plays the same steps to the same counts."""
    out = _step("02", "A\nB\nB\nA\n", "--scenario", "simultaneous")
    schedule = _played(out)
    assert schedule.startswith("ABBA") and len(schedule) > 4
    assert "B  next: SELECT pg_try_advisory_xact_lock(:key)" in out.stdout
    assert "coins paid 30 of 30 expected" in out.stdout
    replay = racelab_json(racelab_here("run", "02", "--scenario", "simultaneous", "--schedule",
                                       schedule, "--json"))
    assert replay["schedule"] == schedule
    assert (replay["runs"], replay["duplicates"], replay["missed"]) == (1, 0, 0)
    moved = [op["process"] for op in replay["history"] if op["f"] == "step"]
    assert "".join(moved) == schedule


@pytest.mark.parametrize(("schedule", "words"), [
    ("AB" + "B" * 30, "B has finished its tick"),
    ("D", "no process 'D' in this instant"),
    ("A" * 60, "A has finished its tick"),
    ("A B", "more than the run took"),
    ("a-b", "is not a replica letter"),
])
def test_a_schedule_that_cannot_be_played_is_one_line_and_leaves_nothing(schedule, words, pg):
    """A finished replica chosen, a letter of no replica, a schedule longer than the run, a
    character that is no letter: one line, exit 2, and no database of the run left."""
    out, pid = racelab_pid("run", "02", "--scenario", "simultaneous", "--schedule", schedule)
    one_line_exit_2(out, words)
    assert left_by(pid, pg.url) == []


def test_a_claim_blocked_on_an_uncommitted_claim_cannot_be_chosen(tmp_path, pg):
    """In 03 without its lock (a stage folder given by path), B's claim waits on A's
    uncommitted claim row: shown blocked on A, and choosing it is refused with whom it waits for.
    The schedule: A locks and claims, B locks and claims (blocked), then B again."""
    folder = _copy_without_lock(tmp_path, "03-claim-row")
    out = _step(str(folder), "AABBB\n", "--scenario", "simultaneous", "--replicas", "2")
    assert "B  blocked: waits for A" in out.stdout
    assert out.returncode == 2, out.stdout
    assert out.stderr.strip() == "racelab: step 5 at 18:00:00: B is blocked: it waits for A"


def test_a_wait_ends_at_the_holders_commit_though_its_tick_goes_on(tmp_path, pg):
    """In 03 without its lock and with a second transaction after the payout's COMMIT, B waits
    on A's claim row; right after A's COMMIT step B may be chosen, while A still has a statement
    to run: the lock table is read again after a step that frees locks, not only at a tick's
    end. The rest of the run: A's second transaction, then B's claim finds A's row."""
    folder = _copy_without_lock(tmp_path, "03-claim-row")
    worker = folder / "myapp" / "worker.py"
    text = worker.read_text()
    assert text.count("            await db.commit()\n") == 1
    worker.write_text(text.replace("            await db.commit()\n", (
        "            await db.commit()\n"
        "            await db.execute(text(\"SELECT 1\"))  # a second transaction\n"
        "            await db.commit()\n")))
    args = ("run", str(folder), "--scenario", "simultaneous", "--replicas", "2", "--json")
    first = racelab_json(racelab_here(*args, "--schedule", "AABB"))  # B blocked, then A in order
    steps = [(op["process"], op["value"]["next"]) for op in first["history"]
             if op["f"] == "step"]
    commit = steps.index(("A", "COMMIT"))
    assert ("A", "SELECT 1") in steps[commit + 1:]
    schedule = "".join(p for p, _ in steps[:commit + 1]) + "B"
    run = racelab_json(racelab_here(*args, "--schedule", schedule))
    moved = [(op["process"], op["value"]["next"]) for op in run["history"]
             if op["f"] == "step"]
    assert moved[commit] == ("A", "COMMIT") and moved[commit + 1][0] == "B"
    assert ("A", "SELECT 1") in moved[commit + 2:]
    assert (run["runs"], run["duplicates"], run["missed"]) == (1, 0, 0)


@pytest.mark.skipif(not THOROUGH, reason="the 3-replica proofs run in `make thorough`")
@pytest.mark.parametrize("stage", ["03", "04", "05"])
def test_explore_with_three_replicas_never_pays_twice_or_misses(stage, pg):
    data = _explore(stage, "--replicas", "3")
    assert list(_outcomes(data)) == ["1 payout"]
    if stage == "03":
        assert data["schedules"] == 1056  # the README's count


@pytest.mark.parametrize("stage", ["04", "05"])
def test_explore_04_and_05_with_two_replicas_never_pays_twice_or_misses(stage, pg):
    """Every class of schedules up to 2 preemptions (the reduction: the same outcomes as the
    full search, tests/lab/test_explore_reduction.py)."""
    data = _explore(stage, "--replicas", "2", "--strategy", "dpor")
    assert list(_outcomes(data)) == ["1 payout"]
    assert data["schedules"] > 1


def test_explore_03_without_its_lock_still_pays_once_the_claim_row_alone_holds(tmp_path, pg):
    folder = _copy_without_lock(tmp_path, "03-claim-row")
    data = _explore(str(folder), "--replicas", "2", "--strategy", "dpor")
    assert list(_outcomes(data)) == ["1 payout"]
    with_lock = _explore("03", "--replicas", "2", "--strategy", "dpor")
    # without the lock the losers go further: more classes of schedules
    assert data["schedules"] > with_lock["schedules"]


def test_explore_00_finds_duplicates_without_a_preemption_and_the_schedule_replays(pg):
    data = _explore("00", "--replicas", "2", "--preemptions", "0")
    assert _outcomes(data) == {"2 payouts": 2}
    shortest = data["outcomes"][0]["shortest"]
    replay = racelab_json(racelab_here("run", "00", "--scenario", "simultaneous", "--replicas", "2",
                                       "--schedule", shortest, "--json"))
    assert (replay["runs"], replay["duplicates"]) == (2, 1)


def test_02_without_its_lock_needs_one_preemption_to_pay_twice(tmp_path, pg):
    """Exercise 08's solution (02 with its lock deleted): with no preemption the first replica
    commits its summary thread before the next reads it; with one, both read "no thread"
    before either commits (the sentinel race). The counts are the exercise's and the README's."""
    folder = copy_02_without_its_lock(tmp_path)
    none = _explore(str(folder), "--replicas", "2", "--preemptions", "0")
    assert _outcomes(none) == {"1 payout": 2}
    one = _explore(str(folder), "--replicas", "2", "--preemptions", "1")
    assert _outcomes(one) == {"1 payout": 2, "2 payouts": 24}
    assert none["first_bad_at"] is None
    # the first run is the schedule without a preemption, which pays once; the other that pays
    # once may end before the first that pays twice
    assert one["first_bad_at"] in (2, 3)
    twice = next(o for o in one["outcomes"] if o["outcome"] == "2 payouts")
    assert twice["bad"] and twice["shortest_preemptions"] == 1
    replay = racelab_json(racelab_here("run", str(folder), "--scenario", "simultaneous",
                                       "--replicas", "2", "--schedule", twice["shortest"],
                                       "--json"))
    assert (replay["runs"], replay["duplicates"]) == (2, 1)
    sentinel = [(op["process"], op["value"]["result"]) for op in replay["history"]
                if op["f"] == "sentinel" and op["type"] == "ok"]
    assert sentinel == [("A", False), ("B", False)]


@pytest.mark.slow
def test_two_shares_explore_exactly_the_whole_tree_and_merge_into_it(tmp_path, pg):
    whole = _explore("03", "--replicas", "2")
    shares = []
    for i in (1, 2):
        out = racelab_here("explore", "03", "--replicas", "2", "--partition", f"{i}/2", "--json")
        (tmp_path / f"share{i}.json").write_text(out.stdout)
        shares.append(racelab_json(out))
    assert len(whole["explored"]) == len(set(whole["explored"])) == whole["schedules"]
    first, second = (set(s["explored"]) for s in shares)
    assert not first & second
    assert first | second == set(whole["explored"])
    assert all(len(s["explored"]) == len(set(s["explored"])) for s in shares)
    merged = racelab_json(racelab_here("explore", "--merge", str(tmp_path / "share1.json"),
                                       str(tmp_path / "share2.json"), "--json"))
    assert merged["schedules"] == whole["schedules"]
    assert _outcomes(merged) == _outcomes(whole)
    assert shares[0]["cut"] == shares[1]["cut"] != ""
    other = {**shares[1], "cut": "0" * 16}  # a share cut from runs that went another way
    (tmp_path / "share2.json").write_text(json.dumps(other))
    one_line_exit_2(racelab_here("explore", "--merge", str(tmp_path / "share1.json"),
                                 str(tmp_path / "share2.json")),
                    "cut the tree into different pieces")
    changed = {**shares[1], "fingerprint": "0" * 16}  # a share of other code (issue 42, item 7)
    (tmp_path / "share2.json").write_text(json.dumps(changed))
    one_line_exit_2(racelab_here("explore", "--merge", str(tmp_path / "share1.json"),
                                 str(tmp_path / "share2.json")),
                    "ran different code, scenarios or racelab versions")


def test_no_process_or_database_is_left_after_explore(pg):
    """Two workers, each with its rig (a database, a zygote per replica): none is left."""
    out, pid = racelab_pid("explore", "00", "--replicas", "2", "--preemptions", "0",
                           env={"RACELAB_JOBS": "2"})
    assert out.returncode == 0, out.stderr
    assert "2 payouts: 2 schedules · shortest:" in out.stdout
    assert left_by(pid, pg.url) == []


def test_input_typed_beyond_the_run_is_one_line_and_exit_2(pg):
    """`step` told more letters than the run has steps: it says how many were left over (03's
    two replicas in order take 18 steps: A's 14, B's 4)."""
    out = _step("03", "A" * 14 + "B" * 4 + "\nAB\n", "--scenario", "simultaneous",
                "--replicas", "2")
    assert out.returncode == 2, out.stdout
    assert "the input goes on after the run's last step" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("stage", "name"), [
    ("detours-01", "staggered"), ("peers-01", "staggered")])
def test_step_mode_refuses_a_track_whose_stages_also_share_redis(stage, name, pg):
    """Step mode holds before SQL statements, and before Redis commands only on the alerts
    track (tests/lab/test_explore_alerts.py): on a track whose stages also use Redis unwrapped
    its schedules would not be all of them, so it says so instead of exploring some."""
    out, pid = racelab_pid("explore", stage, "--scenario", name)
    one_line_exit_2(out, "also share Redis", stdout=None)
    assert left_by(pid, pg.url) == []


@pytest.mark.parametrize("bound", [0, 1, pytest.param(2, marks=pytest.mark.slow)])
def test_explore_00_runs_exactly_the_schedules_a_model_enumerates(bound, pg):
    """The bound as the README defines it, checked on the real stage against an enumeration
    that shares no code with the explorer: 00 with 2 replicas, each 12 statements (the last
    its COMMIT); their UPDATE of the open summary threads takes a row lock the other's UPDATE
    waits for. The model's schedules with at most `bound` preemptions are explore's, no more,
    no fewer (266 at 2 on a model without the wait: 22 of those cannot happen, and 20 that do
    take 3 switches away from a replica with statements left, one of them forced)."""
    played = racelab_json(racelab_here("run", "00", "--scenario", "simultaneous", "--replicas", "2",
                                       "--schedule", "A", "--json"))
    statements = statements_of(played)
    assert [len(s) for s in statements.values()] == [12, 12]
    assert [s[-1] for s in statements.values()] == ["COMMIT", "COMMIT"]
    expected = model_schedules(statements, {"UPDATE threads": True}, bound)
    data = _explore("00", "--replicas", "2", "--preemptions", str(bound))
    assert len(data["explored"]) == len(set(data["explored"]))
    assert set(data["explored"]) == expected
    assert len(expected) == {0: 2, 1: 24, 2: 264}[bound]
    if bound == 2:  # the same model with no row lock: every switch with statements left costs
        unlocked = model_schedules(statements, {}, bound)
        assert (len(unlocked), len(unlocked - expected), len(expected - unlocked)) == (266, 22, 20)


def test_three_shares_split_the_tree_by_work_within_a_factor_of_2(pg):
    """03 with 2 replicas in 3 shares: disjoint, together the whole tree, and no share more
    than twice another (the first two choices gave 27, 25 and 2 of the 54). The whole tree is
    explored by three workers at once: each schedule once, none missed."""
    whole = _explore("03", "--replicas", "2", env={"RACELAB_JOBS": "3"})
    assert len(set(whole["explored"])) == len(whole["explored"])
    assert _outcomes(whole) == {"1 payout": 54}  # the README's row: each pays exactly once
    shares = [_explore("03", "--replicas", "2", "--partition", f"{i}/3") for i in (1, 2, 3)]
    got = [set(s["explored"]) for s in shares]
    assert sum(len(g) for g in got) == whole["schedules"] == 54
    assert set().union(*got) == set(whole["explored"])
    sizes = [len(g) for g in got]
    assert max(sizes) <= 2 * min(sizes), sizes
    assert sizes == [18, 18, 18]  # the README's split


def test_a_tree_too_large_to_end_and_more_replicas_than_letters_are_refused_at_once(pg):
    """explore's full search with 8 replicas would take at least 8! = 40,320 whole runs: one
    line with that estimate, before anything starts; sampling it is allowed. Step mode with
    27 replicas is refused, whatever the chooser: a schedule names each replica by one letter,
    and R27 would not read back."""
    one_line_exit_2(racelab_here("explore", "00", "--replicas", "8", "--preemptions", "0"),
                    "8 replicas give at least 8! = 4.03e+04 schedules",
                    "explore at most 7 replicas", "--strategy random or pct")
    for args in (("explore", "00", "--replicas", "27", "--strategy", "random", "--walks", "1"),
                 ("run", "00", "--replicas", "27", "--scenario", "simultaneous", "--schedule",
                  "A")):
        one_line_exit_2(racelab_here(*args), "at most 26 replicas, not 27", stdout=None)


def test_a_hand_edited_share_is_refused_in_one_line(tmp_path, pg):
    """Shares whose fields are not what explore writes (a partition [2, [2]], explored ids as
    numbers, an outcome's shortest_preemptions null), or whose count disagrees with its own
    list (schedules 1000000 beside 12 explored): one line each, not an internal error or a
    merged count that never happened. The shares as written merge."""
    files = []
    for i in (1, 2):
        out = racelab_here("explore", "00", "--replicas", "2", "--preemptions", "1",
                           "--partition", f"{i}/2", "--json")
        files.append(tmp_path / f"share{i}.json")
        files[-1].write_text(out.stdout)
    merged = racelab_json(racelab_here("explore", "--merge", *map(str, files), "--json"))
    assert merged["schedules"] == 24
    share = json.loads(files[1].read_text())
    edits = {"partition": [2, [2]], "explored": [1, 2], "schedules": 1_000_000}
    for key, value in edits.items():
        files[1].write_text(json.dumps({**share, key: value}))
        one_line_exit_2(racelab_here("explore", "--merge", *map(str, files)), "--merge",
                        "not the JSON of explore --json")
    bad = json.loads(json.dumps(share))
    bad["outcomes"][0]["shortest_preemptions"] = None
    files[1].write_text(json.dumps(bad))
    one_line_exit_2(racelab_here("explore", "--merge", *map(str, files)),
                    "an outcome's fields are not what explore writes")


def test_step_mode_shows_what_the_step_just_played_returned(pg):
    """`racelab step 01` with A then B: after each step, what its statement came to, in the
    picture's words: A's lock taken, B's refused (issue 41, item 6: the screen showed only the
    statement next, never the refused lock)."""
    out = subprocess.run([sys.executable, "-m", "harness.cli", "step", "01", "--scenario",
                          "simultaneous"], input="A\nB\n", capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    got = [x.strip() for x in lines if " got: " in x]
    assert got[:3] == ["A  got: lock ✓", "B  got: lock ✗", "B  got: ROLLBACK"], got
    # each right under the choice that played it
    assert lines[lines.index("  → A") + 1] == "  A  got: lock ✓"
    assert lines[lines.index("  → B") + 1] == "  B  got: lock ✗"
