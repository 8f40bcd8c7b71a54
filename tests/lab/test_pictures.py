"""The run as a picture drawn from its history: lanes of numbered steps, intervals for ticks,
transactions and locks held, links from a refusal to its holder, and a lane for the shared
state; read back by parsing the SVG."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from harness import exercises
from harness.engine.views import pictures
from tests.helpers import racelab, run

SVG = "{http://www.w3.org/2000/svg}"
STATE = "shared state"


def _lanes(text: str):
    return [g for g in ET.fromstring(text).iter(f"{SVG}g") if g.get("class", "").startswith(
        "lane")]


def lanes(text: str) -> dict[str, list[str]]:
    """Lane name -> the outcomes of its steps, in drawing order (every panel, top to bottom)."""
    found: dict[str, list[str]] = {}
    for g in _lanes(text):
        found.setdefault(g.get("data-lane"), []).extend(
            m.get("data-mark") for m in g.iter(f"{SVG}g") if m.get("class") == "mark")
    return {name: kinds for name, kinds in found.items() if name != STATE}


def words(text: str, lane: str) -> list[str]:
    """Every line of text drawn in one lane, in every panel."""
    out = [t.text or "" for g in _lanes(text) if g.get("data-lane") == lane
           for t in g.iter(f"{SVG}text")]
    assert out, f"no lane {lane}"
    return out


def links(text: str) -> list[tuple[str, str, str]]:
    return [(e.get("data-from"), e.get("data-holder"), e.get("data-what"))
            for e in ET.fromstring(text).iter(f"{SVG}line") if e.get("class") == "link"]


def intervals(text: str, f: str) -> list[ET.Element]:
    return [e for e in ET.fromstring(text).iter(f"{SVG}rect")
            if e.get("class") == "interval" and e.get("data-f") == f]


def step_x(text: str, op: int) -> float:
    """The x of the circle of the step holding op `op`."""
    for m in ET.fromstring(text).iter(f"{SVG}g"):
        if m.get("class") == "mark" and str(op) in m.get("data-ops", "").split(","):
            return float(m.get("data-x"))
    raise AssertionError(f"no step holds op {op}")


def payouts(text: str) -> dict[str, list[str]]:
    return {lane: [k for k in kinds if k in ("effect", "duplicate", "accepted")]
            for lane, kinds in lanes(text).items()}


def test_stage_01_staggered_svg_shows_30_60_90_coins_and_each_lock_ending_at_its_commit(
        pg, tmp_path):
    """`run 01 --scenario staggered --svg F --json`: the shared-state lane says coins 30, then
    60, then 90; each replica's lock is one interval that ends at that replica's COMMIT op, its
    right edge at the COMMIT's step; A pays, B and C pay again (duplicates)."""
    out = tmp_path / "t.svg"
    done = racelab("run", "01", "--scenario", "staggered", "--svg", str(out), "--json")
    assert done.returncode == 0, done.stderr
    history = json.loads(done.stdout)["history"]
    text = out.read_text()
    coins = [w.split(" · ")[0] for w in words(text, STATE) if w.startswith("coins")]
    assert coins == ["coins 30", "coins 60", "coins 90"]
    assert payouts(text) == {"A": ["effect"], "B": ["duplicate"], "C": ["duplicate"]}
    commits = {op["process"]: op["index"] for op in history
               if op["f"] == "commit" and op["type"] == "ok"}
    locks = intervals(text, "lock")
    assert sorted(int(e.get("data-to")) for e in locks) == sorted(commits.values())
    for e in locks:
        end = int(e.get("data-to"))
        right = float(e.get("x")) + float(e.get("width"))
        assert abs(right - (step_x(text, end) + pictures.STEP_W * 0.42)) < 0.2


def test_stage_01_simultaneous_points_each_refused_lock_at_the_replica_that_holds_it(pg):
    """Same-instant ticks on 01: the two replicas refused the lock each link to the one that
    took it and paid, and say so; their steps come after the holder's first ones."""
    text = pictures.svg(run("01", "simultaneous"))
    [payer] = [lane for lane, kinds in payouts(text).items() if kinds == ["effect"]]
    refused = sorted((who, holder) for who, holder, what in links(text) if what == "lock")
    assert refused == sorted((lane, payer) for lane in "ABC" if lane != payer)
    for lane in "ABC":
        if lane != payer:
            assert f"lock ✗ {payer} holds the lock" in words(text, lane)


def test_stage_03_picture_shows_b_and_c_losing_the_claim_to_as_row(pg):
    """Stage 03 staggered: A takes the lock and the claim and pays; B and C lose the claim,
    each linked to A's row; the claim row is kept in the shared state from A's COMMIT on."""
    text = pictures.svg(run("03", "staggered"))
    drawn = lanes(text)
    assert drawn["A"] == ["plain", "won", "won", "effect", "plain"]
    # begin, lock, claim lost, its UPDATE of zombie threads (no row), COMMIT
    assert drawn["B"] == drawn["C"] == ["plain", "won", "refused", "plain", "plain"]
    assert "claim ✗ A's row" in words(text, "B")
    assert sorted(links(text)) == [("B", "A", "claim"), ("C", "A", "claim")]
    assert "claim row kept (worker_runs)" in words(text, STATE)


def test_a_kill_shows_on_the_killed_replica_with_its_restart_and_its_open_intervals(pg):
    """kill-mid-tick: the fault acts on one replica, whose lane says killed, then restarted; its
    tick and transaction end with nobody knowing how they went (outcome unknown)."""
    result = run("03", "kill-mid-tick")
    text = pictures.svg(result)
    killed = [lane for lane in result.scenario.replica_names
              if "killed (kill-mid-tick)" in words(text, lane)]
    assert len(killed) == 1
    assert "restarted (kill-mid-tick)" in words(text, killed[0])
    assert [e.get("data-how") for e in intervals(text, "txn") if e.get("data-how") == "info"] \
        == ["info"]


def test_the_same_run_draws_the_same_svg(pg):
    """Nothing measured in real time reaches the picture: two runs, one SVG text."""
    first = pictures.svg(run("02", "silent-failure"))
    again = pictures.svg(run("02", "silent-failure", seed=7))
    assert first == again


def test_the_incident_picture_shows_five_alerts_in_pairs_with_quiet_ticks_folded(pg):
    """alerts-00 incident: A's first alert, then four duplicates (B, A, B, A), and the quiet
    checks between them folded."""
    text = pictures.svg(run("alerts-00", "incident"))
    assert {k: v for k, v in payouts(text).items() if k in "AB"} == {
        "A": ["effect", "duplicate", "duplicate"], "B": ["duplicate", "duplicate"]}
    assert any(w.endswith("quiet tick") or w.endswith("quiet ticks") for w in words(text, "A"))
    assert [w for w in words(text, STATE) if w.startswith("alerts delivered")] == [
        f"alerts delivered {n}" for n in range(1, 6)]


def test_the_redis_claim_and_its_ttl_are_in_the_shared_state(pg):
    """alerts-01 incident: one delivery, and the claim's Redis key with its 24-hour TTL kept."""
    text = pictures.svg(run("alerts-01", "incident"))
    assert payouts(text)["A"] == ["effect"]
    assert "Redis alert:low_credits:1 · TTL 24h" in words(text, STATE)


def test_a_fail_open_duplicate_is_drawn_as_accepted_not_as_a_bug(pg):
    """alerts-01 redis-down: B's second delivery is the accepted cost of failing open."""
    assert payouts(pictures.svg(run("alerts-01", "redis-down")))["B"] == ["accepted"]


def test_a_missed_alert_is_drawn_on_the_check_that_held_it_back(pg):
    """alerts-00 p0: the second check's dedup hit holds the P0 back: drawn as missed there."""
    text = pictures.svg(run("alerts-00", "p0"))
    assert lanes(text)["A"].count("missed") == 1
    assert "MISSED alert: service_down:payments" in words(text, "A")


def test_a_missed_slot_is_drawn_where_it_fell_due(pg):
    """05 crash-after-claim: the task that claimed crashed and nothing pays: the slot is drawn
    missed on the first start at or after its 18:00 due time."""
    text = pictures.svg(run("05", "crash-after-claim"))
    missed = [lane for lane, kinds in lanes(text).items() if "missed" in kinds]
    assert len(missed) == 1
    assert "slot 2026-W22 due: MISSED" in words(text, missed[0])


def test_a_pause_is_drawn_as_standing_still_then_going_on_never_as_a_restart(pg):
    """pause on stage 03: replica A stood still (SIGSTOP) and went on (SIGCONT), a stopped
    interval between; nothing says it was restarted, its process was never replaced."""
    text = pictures.svg(run("03", "pause"))
    said = "\n".join(words(text, "A"))
    assert "stands still (SIGSTOP) (pause)" in said and "goes on (SIGCONT) (pause)" in said
    assert "restarted" not in said
    assert len(intervals(text, "pause")) == 1


def test_a_crash_inside_a_replica_is_drawn_as_a_fault_not_as_routine(pg):
    """crash-after-claim on stage 04: A's lane marks the crash its seam raised and its failed
    tick as faults; B pays after it, C loses the claim to B's row."""
    text = pictures.svg(run("04", "crash-after-claim"))
    drawn = lanes(text)
    assert drawn["A"].count("fault") >= 2
    assert drawn["B"] == ["plain", "won", "won", "effect", "plain"]
    assert ("C", "B", "claim") in links(text)


def test_exercise_06s_fail_closed_solution_draws_its_three_misses(pg, tmp_path):
    """Exercise 06 solved (the claim fails closed): its redis-down cell says 3 missed, and the
    picture draws three misses where each was due: the alert on A's claim at 14:00, the two
    sandbox listings on their windows' claims."""
    [ex] = [ex for ex in exercises.all_exercises() if ex.name == "06-alerts-fail-closed"]
    scratch, _ = exercises.start(ex, tmp_path)
    exercises.solve(ex, tmp_path)
    out = tmp_path / "06.svg"
    done = racelab("run", str(scratch), "--scenario", "redis-down", "--svg", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    missed = [w for lane in ("A", "B") for w in words(text, lane) if w.startswith("MISSED")]
    assert sorted(missed) == ["MISSED alert: low_credits:1", "MISSED listing: 14:00",
                              "MISSED listing: 14:10"]
    assert "MISSED alert: low_credits:1" in words(text, "A")


def test_a_redis_lock_held_past_its_lease_ends_where_the_lease_ran_out(pg):
    """detours-07 pause: A takes the Redis lock (a 60 s lease) and stands still; its lock ends
    where the lease ran out, at 18:01, the instant B takes it; B's runs out at 18:02 when C
    takes it; C's, while it waits for A's row, before A goes on at 18:05. The lock bars follow
    the leases, not the processes."""
    text = pictures.svg(run("detours-07", "pause"))
    locks = {e.get("data-process"): e.get("data-how") for e in intervals(text, "lock")}
    assert locks == {"A": "expired", "B": "expired", "C": "expired"}
    assert "lock ✓ (Redis, lease 1 min)" in words(text, "B")
    assert "lock release failed" in words(text, "A")
