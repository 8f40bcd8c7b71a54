"""Output a user can script: pipes, warnings, errors that say what to do (issue 13)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from harness.engine.views import tables
from tests.helpers import ROOT, one_line_exit_2, racelab, racelab_here, racelab_json, run

LONG_FAULT = """
name = "terminate-a"
replicas = 2
start = "2026-05-29T17:45:00-06:00"
end = "2026-05-29T18:30:00-06:00"

[[faults]]
kind = "terminate-backend"
replica = "A"
at = "2026-05-29T18:00:00-06:00"
"""


def test_a_reader_leaving_early_ends_the_run_quietly_with_exit_0(pg):
    """`racelab run 01 --scenario staggered --timeline | head -3`, at its hardest: the reader
    has gone before the first byte is written. Exit 0, nothing on stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "01", "--scenario",
                             "staggered", "--timeline"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0
    assert err == b""


def test_a_piped_timeline_has_one_event_per_line_unwrapped_and_plain(pg, tmp_path):
    """Piped, each tick is one line however long (no wrap at the console's width), without
    colour codes: `grep 'replica A'` finds all of A's tick."""
    path = tmp_path / "terminate-a.toml"
    path.write_text(LONG_FAULT)
    out = racelab_here("run", "02", "--scenario", str(path), "--timeline")
    assert out.returncode == 0, out.stderr
    assert "\x1b[" not in out.stdout
    timeline = out.stdout.split("\n\n", 1)[1].splitlines()
    assert timeline and all(line.lstrip().startswith("T") for line in timeline), timeline
    long = [line for line in timeline if "18:00:00" in line]
    assert len(long) == 1 and len(long[0]) > 200
    assert long[0].rstrip().endswith("terminating connection due to administrator command")


def test_more_replicas_continue_staggered_and_the_output_says_where_each_ticks(pg):
    """`run 01 --scenario staggered --replicas 5`: A…E a minute apart, so 01 pays 5 times; the
    text says where each replica ticks and the JSON gives each one's offset."""
    out = racelab_here("run", "01", "--scenario", "staggered", "--replicas", "5", "--json")
    assert out.returncode == 0, out.stderr
    data = racelab_json(out)
    assert data["offsets"] == {"A": "0s", "B": "1m", "C": "2m", "D": "3m", "E": "4m"}
    assert (data["runs"], data["coins"]["paid"]) == (5, 150)
    text = racelab_here("run", "01", "--scenario", "staggered", "--replicas", "5")
    assert ("replicas tick every 15m from Fri 18:00:00: A T=0 · B T+1m · C T+2m · D T+3m · "
            "E T+4m") in text.stdout
    assert "· 5 replicas ·" in text.stdout
    assert "· 1 replica ·" in racelab_here("run", "01", "--replicas", "1").stdout


LATE_FAULT = """
name = "late"
replicas = 2
start = "2026-05-29T17:45:00-06:00"
end = "2026-05-29T18:15:00-06:00"
offsets = ["0s", "1m"]

[[faults]]
kind = "terminate-backend"
replica = "A"
at = "2026-05-29T18:07:00-06:00"
"""


def test_a_fault_that_never_fires_is_a_warning_and_the_json_says_why(pg, tmp_path):
    """terminate-backend on A at 18:07, A ticking at 17:45 and 18:00, the run ending at 18:15:
    the fault never acts. A warning naming it on stderr, the timeline and the JSON say why."""
    path = tmp_path / "late.toml"
    path.write_text(LATE_FAULT)
    out = racelab_here("run", "02", "--scenario", str(path), "--json")
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == [
        "racelab: warning: terminate-backend on A at Fri 18:07:00 never applied: no tick of "
        "replica A at or after Fri 18:07:00 held a transaction open before the run ended at "
        "Fri 18:15:00"]
    (fault,) = racelab_json(out)["faults"]
    assert (fault["kind"], fault["replica"], fault["applied"]) == ("terminate-backend", "A", False)
    assert fault["why_not_applied"].startswith("no tick of replica A at or after Fri 18:07:00")
    applied = racelab_here("run", "02", "--scenario", str(_write(tmp_path, LONG_FAULT)), "--json")
    assert applied.stderr == ""
    assert [(f["applied"], f["why_not_applied"]) for f in racelab_json(applied)["faults"]] == [
        (True, None)]


def _write(tmp_path, text, name="scenario.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


TYPOS = {
    "command": (["rn"], "racelab: argument command: invalid choice: 'rn'", "did you mean 'run'?"),
    "track": (["matrix", "--track", "alert"], "racelab: matrix: argument --track",
              "did you mean 'alerts'?"),
    "stage": (["run", "3-claim"], "racelab: unknown stage '3-claim'",
              "did you mean '03-claim-row'?"),
    "scenario": (["run", "01", "--scenario", "staggerd"], "racelab: unknown scenario 'staggerd'",
                 "did you mean 'staggered'?"),
    "other-track": (["run", "02", "--scenario", "deploy"],
                    "racelab: scenario 'deploy' is for the alerts track, not cron",
                    "cron scenarios: simultaneous, staggered"),
}


@pytest.mark.parametrize("case", list(TYPOS))
def test_a_typo_gets_the_nearest_name_in_one_line_without_a_doubled_prefix(case):
    """Each bad name is one line, exit 2, starting `racelab: ` once, with the nearest name
    (or, for another track's scenario, the track it is on)."""
    args, start, hint = TYPOS[case]
    out = racelab_here(*args)
    one_line_exit_2(out, hint)
    assert out.stderr.startswith(start)
    assert "racelab: racelab" not in out.stderr


@pytest.mark.parametrize(("text", "hint"), [
    ('offset = ["0s", "1m"]\n', "offset: unknown key (did you mean 'offsets'?)"),
    ('[[faults]]\nkind = "terminate-backend"\nreplika = "A"\n',
     "faults[0].replika: unknown key (did you mean 'replica'?)"),
    ('[[faults]]\nkind = "terminate-backed"\n',
     "faults[0].kind: 'terminate-backed' is not a fault (did you mean 'terminate-backend'?)"),
])
def test_a_scenario_file_key_typo_gets_the_nearest_key(tmp_path, text, hint):
    path = _write(tmp_path, 'name = "x"\nreplicas = 2\nstart = "2026-05-29T18:00:00-06:00"\n'
                            'end = "2026-05-29T18:15:00-06:00"\n' + text)
    one_line_exit_2(racelab_here("run", "03", "--scenario", str(path)), hint)


BARE = re.compile(r"(?<![/\w.-])racelab (run|matrix|find-race|scenarios|services|clean|bench)\b")


def test_readme_command_lines_use_the_checkouts_racelab():
    """`racelab` is not on PATH after `make setup`: every command a README shows is run as
    .venv/bin/racelab, so it can be copied as it is."""
    readmes = [ROOT / "README.md", *ROOT.glob("[0-9][0-9]-*/README.md"),
               *ROOT.glob("alerts/[0-9][0-9]-*/README.md"), *ROOT.glob("peers/*/README.md")]
    bare = [f"{p.relative_to(ROOT)}: {line.strip()}" for p in readmes
            for line in p.read_text().splitlines() if BARE.search(line)]
    assert bare == []


def test_make_diff_takes_stage_numbers_with_or_without_the_leading_zero():
    """`make diff-1-2` diffs 01 against 02; a stage that does not exist is one clear line."""
    ok = subprocess.run(["make", "-s", "diff-1-2"], cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0 and "01-advisory-lock/" in ok.stdout and ok.stderr == ""
    bad = subprocess.run(["make", "-s", "diff-1-9"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode != 0 and "e.g. make diff-01-02" in bad.stderr


@pytest.mark.slow
def test_matrix_and_scenarios_json_follow_the_documented_schema(pg):
    """`matrix --json` (a list of runs without events) and `scenarios --json` validate."""
    cells = racelab_json(racelab_here("matrix", "--stage", "01", "--json"))
    # the cron scenarios but double-delivery, runtask-refused (05's scheduler) and
    # claim-cleanup (a claim table): 13 of 16
    assert len(cells) == 13 and all("events" not in c for c in cells)
    assert {c["stage"] for c in cells} == {"01-advisory-lock"}
    names = racelab_json(racelab_here("scenarios", "--json"))
    assert {"staggered", "deploy"} <= {s["name"] for s in names}


def _lines(stage: str, name: str) -> list[str]:
    return [line.plain.split(" replica ", 1)[1] for line in tables.timeline(run(stage, name))
            if line.plain.split()[3] == "replica"]


def test_stage_01_shows_its_lock_released_at_commit(pg):
    """01's lesson: the transaction-level lock goes at COMMIT, so B a minute later takes it."""
    lines = _lines("01", "staggered")
    assert len(lines) == 3
    assert all(line.startswith(f"{r}  tick [ok] · lock → true · wrote ") for r, line in
               zip("ABC", lines, strict=True))
    assert all(line.endswith(" · COMMIT (lock released)") for line in lines)


def test_alerts_timelines_show_each_decision_and_no_empty_transaction(pg):
    """01: B's claim comes back false (so no alert); 00: each fresh process starts with an
    empty dedup table, every lookup says hit or miss, and the flood's prune drops the 24-hour
    entry, so low_credits:1 misses and goes out again. No transaction that wrote nothing."""
    claim = _lines("alerts-01", "two-replicas")
    assert "claim alert:low_credits:1 → true · info: alert sent: low_credits:1" in claim[0]
    assert claim[1].startswith("B  tick [ok] · claim alert:low_credits:1 → false · claim "
                               "reconcile:")
    deploy = _lines("alerts-00", "deploy")
    assert [line[:1] for line in deploy] == ["A", "B", "A", "B"]  # a deploy replaces both
    assert all("dedup table empty: a fresh process remembers nothing · dedup low_credits:1 → "
               "miss, sent · info: alert sent: low_credits:1" in line for line in deploy)
    flood = _lines("alerts-00", "prune-flood")[-1]
    assert "prune dropped 1 entry (low_credits:1)" in flood
    assert flood.endswith("dedup low_credits:1 → miss, sent · info: alert sent: low_credits:1 · "
                          "info: reconciled 3 sandboxes")
    for line in claim + deploy + [flood]:
        assert "ROLLBACK" not in line and "COMMIT" not in line, line


@pytest.mark.slow
def test_a_piped_matrix_keeps_each_stage_on_one_row(pg):
    """Piped, the alerts matrix (its widest) is drawn at its natural width: no cell wraps onto a
    second line and no header is cut short, so `grep alerts/01` finds the whole row."""
    out = racelab("matrix", "--track", "alerts", env={"COLUMNS": ""}, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if "alerts/01-redis-claim" in line]
    assert len(rows) == 1
    assert rows[0].count("1 extra, accepted") == 2
    assert "redis-failover" in out.stdout and "…" not in out.stdout
