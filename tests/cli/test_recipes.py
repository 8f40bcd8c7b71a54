"""docs/ARCHITECTURE.md's recipes, done from outside the package: each test writes the recipe's
files into a temp plugin folder and runs them through the CLI. The fault recipe has four kinds,
each its own folder (a subsection), each refused when plugins are off."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

from tests.helpers import ROOT, racelab, racelab_here, racelab_json

DOC = ROOT / "docs" / "ARCHITECTURE.md"
BLOCK = re.compile(r"```(?:python|toml)\n# plugins/(\S+)\n(.*?)```", re.S)


def recipe(title: str, plugins: Path, part: str = "") -> list[str]:
    """Write the `# plugins/…` blocks of one recipe section (of its `### part`, if given) into
    `plugins`; their paths."""
    section = DOC.read_text().split(f"## Recipe: {title}\n", 1)[1].split("\n## ", 1)[0]
    if part:
        section = section.split(f"\n### {part}\n", 1)[1].split("\n### ", 1)[0]
    written = []
    for path, body in BLOCK.findall(section):
        target = plugins / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body)
        written.append(path)
    return written


def run_json(plugins: Path, *args: str) -> dict:
    out = racelab("run", *args, "--json", env={"RACELAB_PLUGINS": str(plugins)})
    assert out.returncode == 0, out.stderr
    return racelab_json(out)


def refused_without_plugins(kind: str, *args: str) -> None:
    """The same run with plugin loading off: exit 2, one line naming the unknown fault kind."""
    out = racelab("run", *args, "--json", env={"RACELAB_PLUGINS": ""})
    assert out.returncode == 2, out.stdout
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert f"faults[0].kind: {kind!r} is not a fault" in out.stderr


def ops(data: dict, **match: str) -> list[dict]:
    """The run's history ops whose fields equal `match` (process, type, f)."""
    return [op for op in data["history"] if all(op[k] == v for k, v in match.items())]


def copy_stage(name: str, to: Path) -> None:
    shutil.copytree(ROOT / name, to, ignore=shutil.ignore_patterns("__pycache__"))


def test_a_stage_added_in_a_plugin_folder_runs_like_the_checkouts_own(pg, tmp_path):
    """A copy of stage 03 as plugins/06-toy-stage runs as stage 06 and pays once."""
    assert recipe("add a stage", tmp_path) == []
    copy_stage("03-claim-row", tmp_path / "06-toy-stage")
    data = run_json(tmp_path, "06", "--scenario", "staggered")
    assert (data["stage"], data["track"], data["runs"], data["duplicates"]) == \
        ("06-toy-stage", "cron", 1, 0)


def test_a_process_fault_added_in_a_plugin_acts_on_the_run(pg, tmp_path):
    """The restart-all fault of the recipe strikes at its time and says so in the events."""
    assert recipe("add a fault", tmp_path, "A process fault") == [
        "toy_fault.py", "restart-all.toml"]
    args = ("03", "--scenario", str(tmp_path / "restart-all.toml"))
    data = run_json(tmp_path, *args)
    faults = [(e["t"], e["detail"]) for e in data["events"] if e["event"] == "fault"]
    assert faults == [("2026-05-29T18:00:00-06:00", "restart-all: 2 replaced")]
    assert (data["runs"], data["duplicates"]) == (1, 0)
    refused_without_plugins("restart-all", *args)


def test_a_fault_interrupting_a_held_transaction_keeps_it_open_until_it_resumes(pg, tmp_path):
    """stall holds A's 18:00 transaction (claim and payout written, not committed) open until
    18:10: B finds the worker lock taken at 18:01 and 18:06, A's 18:05 tick is skipped, and
    A's COMMIT comes at 18:10, inside the stall's resume; the coins appear only then."""
    assert recipe("add a fault", tmp_path, "A fault that interrupts a held transaction") == [
        "stall.py", "stall.toml"]
    args = ("03", "--scenario", str(tmp_path / "stall.toml"))
    data = run_json(tmp_path, *args)
    at = {op["index"]: op["t"][11:16] for op in data["history"]}
    held, resumed = ops(data, process="stall", f="hold"), ops(data, process="stall", f="resume")
    assert [(at[op["index"]], op["type"], op["value"]) for op in held] == [
        ("18:00", "info", {"replica": "A", "until": "2026-05-29T18:10:00-06:00"})]
    assert [(at[op["index"]], op["type"]) for op in resumed] == [("18:10", "invoke"),
                                                                  ("18:10", "ok")]
    assert [(at[op["index"]], op["value"]["result"]) for op in ops(data, process="B", f="lock",
                                                                    type="ok")] == [
        ("18:01", False), ("18:06", False), ("18:11", True)]
    assert [(at[op["index"]], op["value"]) for op in ops(data, process="A", f="tick",
                                                          type="fail")] == [
        ("18:05", {"skipped": "paused"})]
    first_commit = ops(data, process="A", f="commit", type="ok")[0]
    assert at[first_commit["index"]] == "18:10"
    assert resumed[0]["index"] < first_commit["index"] < resumed[1]["index"]
    assert [(s["t"][11:16], s["value"]["coins_paid"]) for s in data["states"]][0] == ("18:10", 30)
    assert (data["runs"], data["duplicates"], data["coins"]["paid"]) == (1, 0, 30)
    refused_without_plugins("stall", *args)


def test_a_seam_fault_declared_by_the_fault_raises_after_its_own_statement(pg, tmp_path):
    """crash-after-first-update raises in A right after its UPDATE of threads (closing the
    zombie thread, after the payout): the crash is an op of the fault's process, between that
    write and A's rollback; the payout dies with it and B's pays once."""
    assert recipe("add a fault", tmp_path, "A seam fault") == [
        "update_crash.py", "crash-after-update.toml"]
    args = ("03", "--scenario", str(tmp_path / "crash-after-update.toml"))
    data = run_json(tmp_path, *args)
    crash = ops(data, process="crash-after-first-update", f="crash")
    assert [(op["type"], op["value"]) for op in crash] == [
        ("invoke", {"after": "UPDATE", "table": "threads"}),
        ("ok", {"after": "UPDATE", "table": "threads"})]
    a = [(op["f"], op["type"], op["value"].get("table"), op["value"].get("updated"))
         for op in data["history"] if op["process"] == "A" or op in crash]
    update = a.index(("write", "ok", "threads", True))
    assert a[update + 1:update + 5] == [("crash", "invoke", "threads", None),
                                        ("crash", "ok", "threads", None),
                                        ("rollback", "invoke", None, None),
                                        ("rollback", "ok", None, None)]
    assert ops(data, process="A", f="tick")[-1]["value"] == {"outcome": "failed"}
    assert [op["value"] for op in ops(data, process="A", f="claim", type="ok")] == [
        {"table": "worker_runs", "result": True, "rows": 1}]
    assert [s["value"]["coins_paid"] for s in data["states"]] == [30, 30]  # B's, then C's
    assert (data["runs"], data["duplicates"], data["coins"]["paid"]) == (1, 0, 30)
    assert [f["applied"] for f in data["faults"]] == [True]
    refused_without_plugins("crash-after-first-update", *args)


def test_a_data_fault_added_in_a_plugin_changes_the_seeded_world(pg, tmp_path):
    """no-activity deletes the seeded week's activity: the stage claims the slot and posts its
    thread but finds no top 3, so it pays no coins and notifies nobody, while the checker still
    expects the seed's 3 winners: one run, partial, coins 0 of 30."""
    assert recipe("add a fault", tmp_path, "A data fault") == [
        "no_activity.py", "no-activity.toml"]
    args = ("03", "--scenario", str(tmp_path / "no-activity.toml"))
    data = run_json(tmp_path, *args)
    assert (data["runs"], data["duplicates"], data["missed"], data["partial"]) == (1, 0, 0, 1)
    assert data["coins"] == {"expected": 30, "paid": 0}
    assert data["slots"][0]["received"] == {"notifications": {"landed": 0, "expected": 3},
                                            "coins": {"landed": 0, "expected": 30},
                                            "threads": {"landed": 1, "expected": 1}}
    assert [s["value"]["credit_rows"] for s in data["states"]] == [0, 0, 0]
    assert [(f["kind"], f["applied"]) for f in data["faults"]] == [("no-activity", True)]
    refused_without_plugins("no-activity", *args)


def test_a_scheduler_added_in_a_plugin_starts_a_task(pg, tmp_path):
    """The recipe's `once` scheduler starts one task process for a stage holding once.txt."""
    assert recipe("add a scheduler", tmp_path) == ["toy_scheduler.py"]
    copy_stage("04-cli-entrypoint", tmp_path / "06-once")
    (tmp_path / "06-once" / "once.txt").write_text("")
    data = run_json(tmp_path, "06", "--scenario", "staggered")
    tasks = [(e["replica"], e["detail"], e["outcome"]) for e in data["events"]
             if e["event"] == "task"]
    assert tasks == [("once-1", "python -m myapp.jobs leaderboard_close --now "
                                "2026-05-29T18:00:00-06:00", "ok")]
    assert (data["runs"], data["duplicates"]) == (1, 0)


def test_a_track_added_in_a_plugin_runs_and_shows_in_the_matrix(pg, tmp_path):
    """The recipe's toy track: two replicas, six ticks, six hellos; its own matrix."""
    assert recipe("add a track", tmp_path) == [
        "toy_track.py", "toy_track/scenarios/hello.toml", "toy/01-hello/myapp/__init__.py",
        "toy/01-hello/myapp/db.py", "toy/01-hello/myapp/models.py",
        "toy/01-hello/myapp/worker.py"]
    data = run_json(tmp_path, "toy-01")
    assert (data["stage"], data["track"], data["scenario"]) == ("toy/01-hello", "toy", "hello")
    assert (data["runs"], data["expected"], data["duplicates"], data["missed"]) == (6, 6, 0, 0)
    _a_second_toy_track(tmp_path, "hi")
    out = racelab("matrix", "--track", "toy", "--track", "hi", "--track", "toy",
                  "--stage", "hi-01", "--stage", "toy-01", env={"RACELAB_PLUGINS": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    # one matrix per track, in the order the tracks were asked, a track asked twice once; each
    # of the stages chosen on it
    toy, hi = out.stdout.split("racelab matrix · toy track · stages toy-01")[1].split(
        "racelab matrix · hi track · stages hi-01")
    assert "toy/01-hello" in toy and "hi/01-hello" not in toy and "cells: hellos landed" in toy
    assert "hi/01-hello" in hi and "toy/01-hello" not in hi and "cells: hellos landed" in hi
    assert "racelab matrix" not in hi


def _a_second_toy_track(plugins: Path, name: str) -> None:
    """The recipe's toy track again under another name: its own file, scenario and stage."""
    source = (plugins / "toy_track.py").read_text()
    (plugins / f"{name}_track.py").write_text(
        source.replace('name="toy", stage_dir="toy"', f'name="{name}", stage_dir="{name}"')
        .replace('"toy_track"', f'"{name}_track"'))
    (plugins / f"{name}_track" / "scenarios").mkdir(parents=True)
    (plugins / f"{name}_track" / "scenarios" / "hello.toml").write_text(
        (plugins / "toy_track" / "scenarios" / "hello.toml").read_text()
        .replace('track = "toy"', f'track = "{name}"'))
    shutil.copytree(plugins / "toy" / "01-hello", plugins / name / "01-hello")


def test_a_view_added_in_a_plugin_writes_the_runs_history_as_csv(pg, tmp_path):
    """--csv FILE, one file in the plugin folder: one row per op of the run, the same ops as
    its --json history; without the plugin, --csv is an unknown option (exit 2)."""
    assert recipe("add a view of a run", tmp_path) == ["csv_view.py"]
    out = tmp_path / "history.csv"
    data = run_json(tmp_path, "03", "--scenario", "simultaneous", "--csv", str(out))
    rows = list(csv.reader(out.read_text().splitlines()[:-1]))  # the last: written by racelab
    assert rows[0] == ["index", "process", "type", "f", "t", "value"]
    assert [(int(r[0]), r[1], r[2], r[3], r[4]) for r in rows[1:]] == [
        (op["index"], op["process"], op["type"], op["f"], op["t"]) for op in data["history"]]
    assert [json.loads(r[5]) for r in rows[1:]] == [op.get("value") for op in data["history"]]
    plain = racelab("run", "03", "--csv", str(out), env={"RACELAB_PLUGINS": ""})
    assert plain.returncode == 2 and "--csv" in plain.stderr


def test_a_strategy_added_in_a_plugin_explores_the_schedule_it_hands_out(pg, tmp_path):
    """--strategy round-robin, one file in the plugin folder: one schedule of 00 with 2
    replicas, the replicas taking turns (A then B, as long as both can move); run --schedule
    replays it to the same 2 payouts; without the plugin the strategy is unknown (exit 2)."""
    assert recipe("add an exploration strategy", tmp_path) == ["round_robin.py"]
    env = {"RACELAB_PLUGINS": str(tmp_path)}
    found = racelab_json(racelab("explore", "00", "--replicas", "2", "--strategy",
                                 "round-robin", "--json", env=env))
    assert (found["strategy"], found["schedules"]) == ("round-robin", 1)
    [schedule] = found["explored"]
    assert schedule.startswith("ABAB")
    assert [(o["outcome"], o["bad"], o["schedules"]) for o in found["outcomes"]] == [
        ("2 payouts", True, 1)]
    replay = racelab_json(racelab_here("run", "00", "--scenario", "simultaneous", "--replicas", "2",
                                  "--schedule", schedule, "--json"))
    assert (replay["schedule"], replay["runs"]) == (schedule, 2)
    printed = racelab("explore", "00", "--replicas", "2", "--strategy", "round-robin", env=env)
    assert ("00-the-bug · simultaneous · read committed · 2 replicas · replicas taking turns"
            in printed.stdout)
    plain = racelab("explore", "00", "--strategy", "round-robin", env={"RACELAB_PLUGINS": ""})
    assert plain.returncode == 2 and "round-robin" in plain.stderr


def test_an_axis_added_in_a_plugin_makes_every_cell_once_per_value(pg, tmp_path):
    """read_only, one file in the plugin folder, over the toy track's one cell: the matrix makes
    it once per value, read_only=off as the toy track counts it (6 hellos of 6) and read_only=on
    with every write refused (0 of 6), each value a line of its column's header; run --set
    makes one such run of 03 (no payout lands); a value it does not take is one line, exit 2."""
    recipe("add a track", tmp_path)
    assert recipe("add a run axis", tmp_path) == ["read_only.py"]
    env = {"RACELAB_PLUGINS": str(tmp_path)}
    cells = racelab_json(racelab("matrix", "--track", "toy", "--json", env=env))
    assert [(c["settings"], c["runs"], c["expected"], c["missed"]) for c in cells] == [
        ({"isolation": "read-committed", "read_only": "off"}, 6, 6, 0),
        ({"isolation": "read-committed", "read_only": "on"}, 0, 6, 6)]
    table = racelab("matrix", "--track", "toy", env={**env, "COLUMNS": "200"})
    header = [line for line in table.stdout.splitlines() if "read_only=" in line]
    assert len(header) == 1 and header[0].index("read_only=off") < header[0].index(
        "read_only=on"), table.stdout
    one = racelab_json(racelab("run", "03", "--set", "read_only=on", "--json", env=env))
    assert (one["settings"], one["runs"]) == ({"isolation": "read-committed", "read_only": "on"},
                                              0)
    wrong = racelab("run", "03", "--set", "read_only=maybe", env=env)
    assert wrong.returncode == 2 and wrong.stderr.strip().splitlines() == [
        "racelab: --set 'read_only=maybe': read_only takes off, on"]


def test_a_plugin_that_breaks_its_declaration_is_one_line_and_exit_2(tmp_path):
    """A plugin file that does not parse, a view without `write`, a strategy option that
    explore already has, an option of a strategy not chosen, an axis set twice: each is one
    line naming what is wrong, exit 2, never a traceback."""
    def refused(files: dict[str, str], *args: str) -> str:
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text)
        out = racelab(*args, env={"RACELAB_PLUGINS": str(folder)})
        assert out.returncode == 2, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
        return out.stderr
    assert "broken.py: SyntaxError" in refused({"broken.py": "x = (\n"}, "run", "03")
    view = ("from harness.api import add_view\nclass V:\n    name, help = 'v', ''\n"
            "    metavar, alone = None, False\nadd_view(V())\n")
    assert "view 'v': its view has no write" in refused({"v.py": view}, "run", "03")
    clash = ("from harness.api import add_strategy\nclass K:\n    name, help = 'k', ''\n"
             "    def add_options(self, p): p.add_argument('--replicas')\n"
             "    def new(self, a): ...\n    def heading(self, d): ...\n"
             "    def scope(self, d): ...\nadd_strategy(K())\n")
    assert "the strategy 'k' declares an option explore already has" in refused(
        {"k.py": clash}, "explore", "03")
    assert "--preemptions is an option of --strategy dfs, not of random" in refused(
        {}, "explore", "03", "--strategy", "random", "--preemptions", "1")
    assert "read_only is set twice" in refused(
        {"read_only.py": _recipe_file("add a run axis", "read_only.py")},
        "run", "03", "--set", "read_only=on", "--set", "read_only=off")


def _recipe_file(title: str, name: str) -> str:
    """One `# plugins/NAME` block of a recipe section, as text."""
    section = DOC.read_text().split(f"## Recipe: {title}\n", 1)[1].split("\n## ", 1)[0]
    return dict(BLOCK.findall(section))[name]
