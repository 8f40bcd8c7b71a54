"""Inputs that would exhaust, hang or crash the lab are refused as they are read: one line on
stderr and exit 2, before any service is touched (issue 19, findings 6, 7 and 14)."""

from __future__ import annotations

import json
import os
import signal
import string
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.engine.model import limits, scenario
from harness.errors import UserError
from harness.infra import services
from tests.helpers import ROOT, one_line_exit_2, racelab, racelab_here, racelab_json

pytestmark = pytest.mark.xdist_group("hostile_input")
BASE = ('name = "x"\nreplicas = 2\nstart = "2026-05-29T18:00:00-06:00"\n'
        'end = "2026-05-29T18:15:00-06:00"\n')
NO_SERVICE = {"RACELAB_POSTGRES_URL": "postgresql://root@127.0.0.1:9/postgres",
              "RACELAB_REDIS_URL": "redis://127.0.0.1:9/0"}


def _file(tmp_path: Path, text: str | bytes, name: str = "bad.toml") -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


def test_a_microsecond_interval_over_a_day_is_refused_with_the_tick_cap(tmp_path):
    """interval = 0.000001s over a day would be 172,800,000,002 ticks: refused, the cap named."""
    path = _file(tmp_path, 'name = "x"\nreplicas = 2\ninterval = "0.000001s"\n'
                           'start = "2026-05-29T00:00:00-06:00"\n'
                           'end = "2026-05-30T00:00:00-06:00"\n')
    one_line_exit_2(racelab_here("run", "00", "--scenario", path),
                    "172,800,000,002 ticks", "at most 100,000")


def test_dev_zero_as_a_scenario_is_refused_as_not_a_regular_file():
    """/dev/zero is never read: it is not a regular file."""
    one_line_exit_2(racelab("run", "00", "--scenario", "/dev/zero", timeout=20),
                    "/dev/zero: not a regular file")


def test_a_fifo_as_a_scenario_is_refused_without_waiting_for_a_writer(tmp_path):
    """A FIFO nobody writes to is refused at once (stat, never opened), not waited on."""
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    one_line_exit_2(racelab("run", "00", "--scenario", str(fifo), timeout=20),
                    "not a regular file")


def test_a_fifo_as_the_svg_is_refused_without_waiting_for_a_reader(tmp_path):
    """--svg at a FIFO is refused before the run, not opened for writing."""
    fifo = tmp_path / "pipe.svg"
    os.mkfifo(fifo)
    one_line_exit_2(racelab("run", "00", "--svg", str(fifo), timeout=20), "--svg",
                    "not a regular file")


def test_a_scenario_file_over_64_kib_is_refused_by_its_size(tmp_path):
    """A 65,536-byte comment plus the keys is past the cap, named in bytes."""
    path = _file(tmp_path, BASE + "#" * 65536 + "\n")
    one_line_exit_2(racelab_here("run", "00", "--scenario", path), "65,631 bytes", "at most 65,536")


@pytest.mark.parametrize(("text", "words"), [
    (b'name = "\xff\xfe"\n', ["not UTF-8 text (byte 8)"]),
    ("a = " + "[" * 30_000 + "]" * 30_000 + "\n", ["nested deeper than 8 levels"]),
    (BASE + 'world = {a = [[[[[[[[1]]]]]]]]}\n', ["nested deeper than 8 levels"]),
    (BASE + '[[faults]]\nkind = ["x"]\n', ["faults[0].kind", "['x'] is not a fault"]),
    (BASE + '[[faults]]\nkind = {a = 1}\n', ["faults[0].kind", "{'a': 1} is not a fault"]),
    (BASE + 'track = ["cron"]\n', ["track", "['cron'] is not one of"]),
    (BASE + 'faults = 5\n', ["faults", "must be a list of tables"]),
    (BASE + 'interval = "99999999999d"\n', ["interval", "longer than 366 days"]),
    (BASE + 'lock_turn = "99999999999d"\n', ["lock_turn", "longer than 366 days"]),
    (BASE + 'offsets = ["0s", "99999999999d"]\n', ["offsets", "longer than 366 days"]),
    (BASE + 'skew = ["0s", "-99999999999d"]\n', ["skew", "longer than 366 days"]),
    (BASE.replace("2026-05-29T18:15", "9999-05-29T18:15"), ["end", "years 1970 to 2100"]),
    (BASE.replace("replicas = 2", "replicas = 65"), ["replicas", "from 1 to 64"]),
])
def test_a_malformed_scenario_file_is_one_line_and_exit_2(tmp_path, text, words):
    """Each of the review's files that crashed (exit 1, a traceback) now names what is wrong."""
    one_line_exit_2(racelab_here("run", "00", "--scenario", _file(tmp_path, text)), *words)


@pytest.mark.parametrize(("text", "words"), [
    ('{"name": "x", "name": "y"}', ["the key 'name' is given twice"]),
    ('{"name": "x", "replicas": 1' + "0" * 5000 + "}", ["not a scenario", "digits"]),
    ("[" * 30_000 + "]" * 30_000, ["nested deeper than 8 levels"]),
    ('{"name": "x", "replicas": 1, "start": "2026-05-29T18:00:00-06:00", '
     '"end": "2026-05-29T18:15:00-06:00", "seed": 18446744073709551616}',
     ["seed", "at most 63 bits"]),
])
def test_a_malformed_json_scenario_is_one_line_and_exit_2(tmp_path, text, words):
    """A JSON key given twice is refused, not settled by the last one; huge numbers, deep lists."""
    path = _file(tmp_path, text, "bad.json")
    one_line_exit_2(racelab_here("run", "00", "--scenario", path), *words)


@pytest.mark.parametrize(("args", "words"), [
    (["run", "00", "--replicas", "97"], ["--replicas", "97", "from 1 to 64"]),
    (["run", "00", "--replicas", "100000"], ["--replicas", "from 1 to 64"]),
    (["run", ""], ["an empty stage name"]),
    (["report", "--html", ""], ["--html: an empty path"]),
    (["report", "--html", "  "], ["--html: an empty path"]),
    (["matrix", "--track", "alerts", "--stage", "03"],
     ["--track alerts but stage 03 is on the cron track"]),
    (["matrix", "--track", "cron", "--track", "alerts", "--stage", "03"],
     ["--track alerts but no --stage on the alerts track"]),
])
def test_contradictory_or_empty_options_are_refused(args, words):
    """Options that would be settled silently (or run something else) are one line, exit 2."""
    one_line_exit_2(racelab(*args, env=NO_SERVICE), *words)


def test_the_command_line_and_scenario_files_share_the_replicas_bound(tmp_path):
    """64 is the most replicas either way: the file's 64 loads, the CLI's 64 parses, 65 does not."""
    text = BASE.replace("replicas = 2", f"replicas = {limits.MAX_REPLICAS}")
    assert scenario.load_file(_file(tmp_path, text)).replicas == 64
    one_line_exit_2(racelab_here("run", "00", "--replicas", "65"), "from 1 to 64")


_TOML_VALUES = st.recursive(
    st.one_of(st.integers(min_value=-(2**63), max_value=2**63 - 1), st.booleans(),
              st.sampled_from(["15m", "0.000001s", "99999999999d", "-7d", "9999-01-01T00:00:00Z",
                               "2026-05-29T18:00:00-06:00", "cron", "alerts", "kill-mid-tick"]),
              st.text(string.printable, max_size=12)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(["kind", "at", "replica", "a"]),
                                            inner, max_size=3)),
    max_leaves=12)
_TABLES = st.dictionaries(st.sampled_from(sorted(scenario.KEYS) + ["zzz"]), _TOML_VALUES,
                          max_size=12)


def _toml(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)  # a string, an int, true or false are written as JSON writes them


def _as_toml(data: dict) -> str:
    return "\n".join(f"{k} = {_toml(v)}" for k, v in data.items()) + "\n"


_GARBAGE = st.one_of(
    st.binary(max_size=200),
    _TABLES.map(lambda d: ("json", json.dumps(d))),
    _TABLES.map(lambda d: ("toml", _as_toml(d))),
    st.text(max_size=200).map(lambda t: ("toml", t)),
)


def _write_garbage(tmp_path: Path, garbage) -> Path:
    suffix, body = ("toml", garbage) if isinstance(garbage, bytes) else garbage
    path = tmp_path / f"garbage.{suffix}"
    path.write_bytes(body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass"))
    return path


@settings(max_examples=300)
@given(garbage=_GARBAGE)
def test_any_file_loads_as_a_scenario_or_is_one_user_error(tmp_path_factory, garbage):
    """Generated files: each loads, or raises UserError of one line; never another exception."""
    path = _write_garbage(tmp_path_factory.mktemp("g"), garbage)
    try:
        scenario.load_file(path)
    except UserError as e:
        assert "\n" not in str(e)


@pytest.mark.slow
@settings(max_examples=25)
@given(garbage=_GARBAGE)
def test_racelab_run_on_generated_garbage_exits_2_with_one_line(tmp_path_factory, garbage):
    """Through the CLI with no service reachable: a bad file, or a good one that cannot run,
    is exit 2 and one line, never exit 1 (an internal error)."""
    path = _write_garbage(tmp_path_factory.mktemp("g"), garbage)
    one_line_exit_2(racelab("run", "00", "--scenario", str(path), env=NO_SERVICE, timeout=60),
                    stdout=None)


def test_toml_as_written_by_the_property_is_toml():
    """The property's TOML writer writes what tomllib reads back (so its files test the lab)."""
    assert tomllib.loads(_as_toml({"name": "x", "faults": [{"kind": "a"}]})) == {
        "name": "x", "faults": [{"kind": "a"}]}


def test_an_output_that_is_the_scenario_file_read_is_refused_even_with_force(tmp_path, pg):
    """`run 01 --scenario r1.toml --svg r1.toml` would replace the scenario (a race find-race
    found) with its own picture: refused before the run, with or without --force, and the
    file is left as it was."""
    scenario = tmp_path / "r1.toml"
    text = (ROOT / "harness" / "tracks" / "cron" / "scenarios" / "staggered.toml").read_text()
    scenario.write_text(text.replace('name = "staggered"', 'name = "r1"'))
    for force in ((), ("--force",)):
        one_line_exit_2(racelab_here("run", "01", "--scenario", str(scenario), "--svg",
                                str(scenario), *force), "--svg", "the scenario file this run reads")
        assert scenario.read_text().startswith('name = "r1"')


@pytest.mark.parametrize("offsets", [["-366d", "-366d"], ["0s", "-30d"], ["0s", "-1s"]])
def test_a_negative_offset_is_refused_before_it_plans_ticks_before_start(tmp_path, offsets):
    """An offset is how long after start a replica's loop first ticks: a negative one planned
    every tick from start+offset, past the tick bound (4.6 GB in a minute at -366d; at -30d,
    2,881 ticks before start and slots 'paid late'). One line naming offsets, exit 2."""
    text = (ROOT / "harness" / "tracks" / "cron" / "scenarios" / "simultaneous.toml").read_text()
    path = tmp_path / "back.toml"
    path.write_text(text.replace('replicas = 3', 'replicas = 2').replace(
        'offsets = ["0s", "0s", "0s"]', f"offsets = {offsets!r}".replace("'", '"')))
    one_line_exit_2(racelab_here("run", "00", "--scenario", str(path)), "offsets",
                    "must not be negative")


@pytest.mark.parametrize(("world", "words"), [
    ('low_credits = [9223372036854775808]', ["world.low_credits", "from 1 to 2^63 - 1"]),
    ('low_credits = [1, 1]', ["world.low_credits", "each one once"]),
    (f'services_down = ["{"s" * 65}"]', ["world.services_down", "at most 64 characters"]),
])
def test_a_world_value_its_table_cannot_hold_is_refused_when_read(tmp_path, world, words):
    """An id past bigint, a name past its column, a name twice (a primary key): one line
    naming the key, before anything runs (were: internal errors from the seed)."""
    text = (ROOT / "harness" / "tracks" / "alerts" / "scenarios" / "incident.toml").read_text()
    path = tmp_path / "w.toml"
    path.write_text(text.replace("low_credits = [1]", world))
    one_line_exit_2(racelab_here("run", "alerts-01", "--scenario", str(path)), *words)


@pytest.mark.parametrize("key", ["name", "description"])
def test_a_control_character_in_a_scenarios_words_is_refused(tmp_path, key):
    """An OSC sequence in the name set the terminal's window title and made the SVG ill-formed
    XML: a scenario's name and description are printable, one line, or refused naming the key."""
    text = (ROOT / "harness" / "tracks" / "cron" / "scenarios" / "staggered.toml").read_text()
    path = tmp_path / "ctl.toml"
    if key == "name":
        text = text.replace('name = "staggered"', 'name = "x\\u001b]0;owned\\u0007"')
    else:
        text = text.replace('description = "', 'description = "\\u001b[2J')
    path.write_text(text)
    out = racelab_here("run", "03", "--scenario", str(path))
    one_line_exit_2(out, key, "no control characters")
    assert "\x1b" not in out.stderr


def test_a_schedule_with_instants_the_run_never_reached_is_refused(pg):
    """Sixty thousand trailing `-` groups (an instant with no letter each) were accepted, exit
    0: the run had two instants with a choice. Instants the run never came to are left over,
    as letters are: one line, 'more than the run took'."""
    out = racelab_here("run", "02", "--scenario", "simultaneous", "--schedule",
                  "AABB " + " ".join(["-"] * 60_000))
    one_line_exit_2(out, "--schedule", "more than the run took", stdout=None)


def test_a_url_with_libpq_options_is_used_as_written(pg):
    """`options=-c%20statement_timeout%3D5000`, as psql takes it, reaches PostgreSQL as written
    (it was re-encoded with '+': 'unrecognized configuration parameter "+statement_timeout"')."""
    url = services.libpq_url(pg.url)
    joined = "&" if "?" in url else "?"
    out = racelab("services", env={services.PG_ENV: f"{url}{joined}options=-c%20statement_timeout"
                                   "%3D5000"})
    assert out.returncode == 0, out.stderr
    assert "statement_timeout%3D5000" in out.stdout


SCHEDULE_02 = "ABBAAAAAAAAAAAAACCCC"  # step 02 --scenario simultaneous, played whole


def _step_02(stdin) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness.cli", "step", "02", "--scenario",
                             "simultaneous"], cwd=ROOT, stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_step_reads_only_what_the_run_needs_from_an_endless_pipe(pg):
    """`yes SCHEDULE | racelab step 02`: the run takes its letters, the input that goes on is
    one line and exit 2, at once (issue 42, item 2: before, 11 GB in 25 s, never ending)."""
    yes = subprocess.Popen(["yes", SCHEDULE_02], stdout=subprocess.PIPE)
    try:
        step = _step_02(yes.stdout)
        out, err = step.communicate(timeout=120)
    finally:
        yes.kill()
        yes.wait()
    one_line_exit_2(subprocess.CompletedProcess(step.args, step.returncode, out, err),
                    "the input goes on after the run's last step", f"it played {SCHEDULE_02!r}",
                    stdout=None)


def test_step_answers_when_the_run_ends_though_the_writer_keeps_its_end_open(pg):
    """The whole schedule written, the pipe left open: the verdict comes when the run ends,
    not when the writer closes (before: it waited for the writer)."""
    step = _step_02(subprocess.PIPE)
    step.stdin.write(SCHEDULE_02 + "\n")
    step.stdin.flush()
    try:
        code = step.wait(timeout=120)  # stdin still open
        assert code == 0, step.stderr.read()
        assert f"schedule played: {SCHEDULE_02}" in step.stdout.read()
    finally:
        step.kill()
        step.communicate()


def test_ctrl_c_while_step_waits_for_piped_input_is_exit_130(pg):
    """Nothing written and the pipe open: step waits for a letter; Ctrl-C ends it, 130, with
    nothing of the run left (before: SIGINT was not let through)."""
    step = _step_02(subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        seen = ""
        while "step 1" not in seen and time.monotonic() < deadline:  # the first step is shown
            seen += step.stdout.readline()
        step.send_signal(signal.SIGINT)
        code = step.wait(timeout=60)
        assert code == 130, step.stderr.read()
    finally:
        step.kill()
        step.communicate()


def test_two_stuck_job_floods_at_one_instant_are_two_floods(tmp_path):
    """Two stuck-job floods at one instant once crashed the run on their rows' keys (issue 42,
    item 12): each is a flood of its own jobs, and every one of the 1,200 gets its alert."""
    text = (ROOT / "harness/tracks/alerts/scenarios/prune-flood.toml").read_text()
    twice = text + '\n[[faults]]\nkind = "stuck-job-flood"\nat = "2026-06-05T14:20:00-06:00"\n'
    path = tmp_path / "two-floods.toml"
    path.write_text(twice)
    data = racelab_json(racelab_here("run", "alerts-01", "--scenario", str(path), "--json"))
    assert data["alert_counts"] == {"expected": 1201, "sent": 1201, "duplicates": 0, "missed": 0}


GIGABYTE = 1 << 30


def _peak_rss(argv: list[str], stdin=None, timeout: float = 120) -> tuple[int, int, str]:
    """Run a racelab command; (exit code, the peak of its process tree's summed resident
    memory, sampled every 20 ms, stderr)."""
    import psutil

    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *argv], cwd=ROOT, stdin=stdin,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak, deadline = 0, time.monotonic() + timeout
    root = psutil.Process(proc.pid)
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            tree = [root, *root.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.02)
    if proc.poll() is None:
        proc.kill()
    _, err = proc.communicate(timeout=30)
    return proc.returncode, peak, err


PROBES = {  # issue 42, items 1-3: each once took gigabytes, or ran without end
    "a year of negative offsets at 1 s": (
        BASE.replace('"2026-05-29T18:15:00-06:00"', '"2026-05-29T18:01:00-06:00"')
        + 'interval = "1s"\noffsets = ["-366d", "-366d"]\n', "offsets"),
    "a replica 30 days before the start": (BASE + 'offsets = ["0s", "-30d"]\n', "offsets"),
}


@pytest.mark.parametrize("name", list(PROBES))
def test_no_scenario_of_the_probe_takes_a_gigabyte(tmp_path, name):
    text, word = PROBES[name]
    code, peak, err = _peak_rss(["run", "03", "--scenario", _file(tmp_path, text)])
    assert (code, word in err) == (2, True), err
    assert peak < GIGABYTE, f"{name}: {peak / GIGABYTE:.2f} GB"


def test_explore_of_27_replicas_and_an_endless_step_pipe_stay_under_a_gigabyte(pg):
    code, peak, err = _peak_rss(["explore", "00", "--replicas", "27", "--preemptions", "0"])
    assert (code, "27! = 1.09e+28 schedules" in err) == (2, True), err
    assert peak < GIGABYTE, f"explore: {peak / GIGABYTE:.2f} GB"
    yes = subprocess.Popen(["yes", SCHEDULE_02], stdout=subprocess.PIPE)
    try:
        code, peak, err = _peak_rss(["step", "02", "--scenario", "simultaneous"], yes.stdout)
    finally:
        yes.kill()
        yes.wait()
    assert (code, "the input goes on" in err) == (2, True), err
    assert peak < GIGABYTE, f"step: {peak / GIGABYTE:.2f} GB"
