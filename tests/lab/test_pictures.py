"""The run as a picture: lanes per replica against virtual time, read back by parsing the SVG."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from harness.engine import pictures
from tests.helpers import racelab, run

SVG = "{http://www.w3.org/2000/svg}"


def lanes(text: str) -> dict[str, list[str]]:
    """Lane name -> the kinds of its marks, in drawing order."""
    root = ET.fromstring(text)
    found = {}
    for g in root.iter(f"{SVG}g"):
        if g.get("class") == "lane":
            found[g.get("data-lane")] = [m.get("data-mark") for m in g.iter(f"{SVG}g")
                                         if m.get("class") == "mark"]
    return found


def words(text: str, lane: str) -> list[str]:
    """Every line of text drawn in one lane, its name first."""
    root = ET.fromstring(text)
    for g in root.iter(f"{SVG}g"):
        if g.get("class") == "lane" and g.get("data-lane") == lane:
            return [t.text for t in g.iter(f"{SVG}text")]
    raise AssertionError(f"no lane {lane}")


def test_run_svg_with_json_draws_a_payout_in_each_lane_of_stage_01(pg, tmp_path):
    """`run 01 --scenario staggered --svg F --json`: JSON on stdout, and lanes A, B, C each
    hold a payout, the second and third marked as duplicates."""
    out = tmp_path / "t.svg"
    done = racelab("run", "01", "--scenario", "staggered", "--svg", str(out), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["runs"] == 3
    drawn = lanes(out.read_text())
    assert list(drawn) == ["A", "B", "C"]
    payouts = {lane: [k for k in kinds if k in ("effect", "duplicate")]
               for lane, kinds in drawn.items()}
    assert payouts == {"A": ["effect"], "B": ["duplicate"], "C": ["duplicate"]}


def test_stage_03_picture_shows_b_and_c_skipping_on_the_claim(pg):
    """Stage 03 staggered: A pays; B and C find the claim taken and skip, paying nothing."""
    text = pictures.svg(run("03", "staggered"))
    drawn = lanes(text)
    assert drawn["A"] == ["tick", "ok", "ok", "effect", "commit"]
    assert drawn["B"] == drawn["C"] == ["tick", "ok", "skip", "commit"]
    assert "claim ✗ → skip" in words(text, "B")


def test_a_kill_shows_on_the_faults_lane_and_on_the_killed_replica(pg):
    """kill-mid-tick: the fault has its own lane, and the killed replica's lane says killed."""
    result = run("03", "kill-mid-tick")
    drawn = lanes(pictures.svg(result))
    assert list(drawn)[0] == "faults"
    killed = [lane for lane, kinds in drawn.items() if "kill" in kinds]
    assert len(killed) == 1 and killed[0] in result.scenario.replica_names


def test_the_same_run_draws_the_same_svg(pg):
    """Nothing measured in real time reaches the picture: two runs, one SVG text."""
    first = pictures.svg(run("02", "silent-failure"))
    again = pictures.svg(run("02", "silent-failure", seed=7))
    assert first == again


def test_the_incident_picture_shows_five_alerts_in_pairs_with_quiet_ticks_folded(pg):
    """alerts-00 incident: A's first alert, then four duplicates (B, A, B, A), and the quiet
    checks between the pairs folded into one column each."""
    text = pictures.svg(run("alerts-00", "incident"))
    drawn = lanes(text)
    sent = {lane: [k for k in kinds if k in ("effect", "duplicate")]
            for lane, kinds in drawn.items() if lane in "AB"}
    assert sent == {"A": ["effect", "duplicate", "duplicate"], "B": ["duplicate", "duplicate"]}
    assert words(text, "A").count("2 quiet ticks") == 1
    assert words(text, "A").count("4 quiet ticks") == 1


def test_a_fail_open_duplicate_is_drawn_as_accepted_not_as_a_bug(pg):
    """alerts-01 redis-down: B's second delivery is the accepted cost of failing open."""
    drawn = lanes(pictures.svg(run("alerts-01", "redis-down")))
    assert [k for k in drawn["B"] if k in ("effect", "duplicate", "accepted")] == ["accepted"]


def test_a_pause_is_drawn_as_standing_still_then_going_on_never_as_a_restart(pg):
    """pause on stage 03: replica A's lane says it stood still (SIGSTOP) and went on (SIGCONT);
    nothing says it was restarted, since its process was never replaced."""
    text = "\n".join(t or "" for t in words(pictures.svg(run("03", "pause")), "A"))
    assert "stands still: SIGSTOP (pause)" in text
    assert "goes on: SIGCONT (pause)" in text
    assert "restarted" not in text


def test_a_crash_inside_a_replica_is_drawn_as_a_fault_not_as_routine(pg):
    """crash-after-claim on stage 04: A's lane marks the crash its seam raised as a fault and
    its failed tick as an error; B pays after it, C skips."""
    drawn = lanes(pictures.svg(run("04", "crash-after-claim")))
    assert "fault" in drawn["A"] and drawn["A"][0] == "error"
    assert drawn["B"] == ["tick", "ok", "ok", "effect", "commit"]
    assert drawn["C"] == ["tick", "ok", "skip", "commit"]
