"""What tests share: the checkout's root, the CLI as a user runs it, a cached run, and how to
see the processes a command left. Tests import from here, never from each other."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import psycopg
import pytest

from harness.engine.model import scenario, stages
from harness.engine.run import cells, runner
from harness.infra import cleanup, kinds

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "docs" / "racelab.schema.json"

LONG_RUN = """
name = "long"
replicas = 3
interval = "1m"
start = "2026-05-25T00:00:00-06:00"
end = "2026-06-05T00:00:00-06:00"
"""
DEADLINE_S = 60.0


@cache
def run(stage: str, scenario_name: str, seed: int | None = None) -> runner.RunResult:
    """One run of a canonical scenario; the same (stage, scenario, seed) replays the same run,
    so it is run once per session and shared by the tests that read it (results are frozen)."""
    st = stages.resolve(stage)
    sc = scenario.resolve(scenario_name, st.track)
    if seed is not None:
        sc = sc.with_seed(seed)
    return cells.run_cell(st, sc)  # a matrix cell's run, as the README shows it


def racelab(*args: str, env: dict | None = None, timeout: float = 120,
            cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """Run the CLI as a user would, in a separate process."""
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
        timeout=timeout, cwd=cwd, env={**os.environ, **(env or {})},
    )


def racelab_here(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """The CLI's `main` called in this test's process, with what it printed and returned as
    `racelab()` gives them. The command runs as in its own process (the same parser, commands,
    output and exit codes), but the interpreter, its imports, the forkserver and an emptied run
    database are kept from one call to the next, as a long command running many runs keeps
    them. So a test making many small explorations pays those once. A test of what a
    command's own process does at its end (what it leaves behind, Ctrl-C, SIGKILL) runs it
    with `racelab()` or `racelab_pid()`."""
    from harness.cli.main import main

    saved_env = {k: os.environ.get(k) for k in (env or {})}
    saved = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM),
             sys.unraisablehook, sys.argv, os.getcwd())
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.update(env or {})
        sys.argv = [str(ROOT / ".venv" / "bin" / "racelab"), *args]
        os.chdir(ROOT)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as e:  # argparse's own errors and --help
                code = e.code if isinstance(e.code, int) else 2
    finally:
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        signal.signal(signal.SIGINT, saved[0])
        signal.signal(signal.SIGTERM, saved[1])
        sys.unraisablehook, sys.argv = saved[2], saved[3]
        os.chdir(saved[4])
    return subprocess.CompletedProcess(["racelab", *args], code, out.getvalue(), err.getvalue())


@cache
def schema_validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def racelab_json(out: subprocess.CompletedProcess | str) -> Any:
    """What a `racelab … --json` printed, parsed, after checking it against the documented
    schema (docs/racelab.schema.json). Every test reading the CLI's JSON goes through here."""
    if isinstance(out, subprocess.CompletedProcess):
        assert out.returncode == 0, out.stderr
        out = out.stdout
    data = json.loads(out)
    schema_validator().validate(data)
    return data


def one_line_exit_2(out: subprocess.CompletedProcess, *words: str,
                    stdout: str | None = "") -> None:
    """Bad input: exit 2 and one line on stderr naming `words` (and `stdout`, unless None)."""
    assert out.returncode == 2, out.stderr
    if stdout is not None:
        assert out.stdout == stdout
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "Traceback" not in out.stderr
    for word in words:
        assert word in lines[0]


def descendants(pid: int) -> set[int]:
    """Every process below pid, walked down from it by the children each of its threads
    forked (/proc/PID/task/TID/children): a test polling this every millisecond reads a few
    small files, not every process's stat."""
    tasks = Path(f"/proc/{pid}/task")
    if tasks.is_dir() and not any(tasks.glob("*/children")):  # never an empty set for "none"
        raise RuntimeError("this kernel has no /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN)")
    found: set[int] = set()
    todo = [pid]
    while todo:
        try:
            listings = list(Path(f"/proc/{todo.pop()}/task").glob("*/children"))
        except OSError:  # the process ended since its parent listed it
            continue
        for listing in listings:
            try:
                children = [int(c) for c in listing.read_text().split()]
            except OSError:  # the thread or the process ended meanwhile
                continue
            todo += [c for c in children if c not in found]
            found.update(children)
    return found


def alive(pid: int) -> bool:
    """True while pid runs (a zombie counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(condition: Callable[[], object], what: str, timeout: float = DEADLINE_S):
    """Poll a real condition until it is truthy and return its value; fail naming `what` at
    the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")


CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--hide-scrollbars")


NO_CHROMIUM = "headless Chromium is not on PATH (apt-get install -y chromium)"


def chromium_missing() -> str:
    """Why the browser tests are skipped here, or "" when they run: Chromium is on PATH, or
    CI=true (`.ci/run`) requires them."""
    import shutil

    return "" if shutil.which("chromium") or os.environ.get("CI") == "true" else NO_CHROMIUM


def need_chromium() -> str:
    """The path of headless Chromium (Debian's `chromium`); without it the test is skipped,
    except under CI=true, where a missing browser fails it."""
    import shutil

    binary = shutil.which("chromium")
    if binary:
        return binary
    if os.environ.get("CI") == "true":
        pytest.fail(f"{NO_CHROMIUM}; CI=true requires the browser tests")
    pytest.skip(NO_CHROMIUM)


def chromium(url: str, *flags: str, timeout: float = 120) -> str:
    """What headless Chromium makes of `url`: stdout of its run with `flags` (e.g. --dump-dom),
    in a throwaway profile. Tests that call it are marked `browser` (see need_chromium)."""
    binary = need_chromium()
    with tempfile.TemporaryDirectory(prefix="racelab-chromium-") as profile:
        out = subprocess.run([binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *flags, url],
                             capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _own_dirs(owner: int) -> list[tuple[Path, dict]]:
    """The lab temp dirs of harness `owner` that record a started server."""
    found = []
    for path in [d for root in cleanup.roots() for d in root.glob(f"{cleanup.TEMP_PREFIX}*")]:
        try:
            data = json.loads((path / cleanup.OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue
        if data.get("owner") == owner and data.get("pid"):
            found.append((path, data))
    return found


def _embedded_postgres_of(harness: subprocess.Popen) -> tuple[Path, int, str]:
    """(temp dir, postmaster pid, admin URL) of the embedded PostgreSQL a harness started."""
    path, data = wait_for(lambda: next(((p, d) for p, d in _own_dirs(harness.pid)
                                          if d["program"] == "postgres"), None),
                           "the harness to start its embedded PostgreSQL")
    pidfile = path / "data" / "postmaster.pid"
    port = wait_for(lambda: pidfile.exists() and len(pidfile.read_text().splitlines()) > 3
                     and pidfile.read_text().splitlines()[3], "postmaster.pid")
    return path, data["pid"], f"postgresql://postgres@127.0.0.1:{port}/postgres"


def start_embedded_long_run(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, Path, int]:
    """A long stage-03 run (with `args`) on the embedded PostgreSQL, its 3 replicas connected:
    (the harness, the server's temp dir, the postmaster's pid)."""
    scenario_file = tmp_path / "long.toml"
    scenario_file.write_text(LONG_RUN)
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "03", "--scenario",
                             str(scenario_file), *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, kinds.SERVICES_ENV: "embedded"})
    path, postmaster, url = _embedded_postgres_of(proc)

    def connected() -> bool:
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=2) as conn:
                return conn.execute(
                    "SELECT count(DISTINCT application_name) FROM pg_stat_activity "
                    "WHERE application_name LIKE 'racelab:%'").fetchone()[0] == 3
        except psycopg.OperationalError:
            return False

    wait_for(connected, "3 replicas connected to the embedded PostgreSQL")
    return proc, path, postmaster


def of_process(history: list[dict], process: str, f: str) -> list[dict]:
    return [op for op in history if op["process"] == process and op["f"] == f]


def assert_one_total_order_with_every_lock_and_commit_paired(history: list[dict]) -> None:
    """Strictly increasing index; each replica's lock an invoke then its ok; its commit after
    its writes."""
    assert [op["index"] for op in history] == list(range(len(history)))
    for name in ("A", "B", "C"):
        locks = of_process(history, name, "lock")
        assert [op["type"] for op in locks] == ["invoke", "ok"], locks
        assert locks[1]["value"]["result"] is True  # staggered: each takes the lock in turn
        writes = [op["index"] for op in of_process(history, name, "write")]
        commits = of_process(history, name, "commit")
        assert [op["type"] for op in commits] == ["invoke", "ok"]
        assert writes and max(writes) < commits[0]["index"]
        assert locks[1]["index"] < min(writes)


def dry_runs(targets: list[str]) -> list[tuple[str, subprocess.CompletedProcess]]:
    """`make -n -B TARGET` for each target, side by side; -B: a dry run of `setup` shows its
    recipe even when done. PYTHON is given: the search for one (scripts/find-python, seconds
    where pyenv shims answer for versions not installed) is not what a dry run checks."""
    from concurrent.futures import ThreadPoolExecutor

    def dry(target: str) -> subprocess.CompletedProcess:
        return subprocess.run(["make", "-n", "-B", f"PYTHON={sys.executable}", target],
                              cwd=ROOT, capture_output=True, text=True)

    with ThreadPoolExecutor(8) as pool:
        return list(zip(targets, pool.map(dry, targets), strict=True))


def waits_for_its_harness(conn) -> None:
    """A forkserver child like a replica between ticks: it dies with its parent and waits for
    the harness's next message."""
    from harness.infra.procs import die_with_parent

    die_with_parent()
    with contextlib.suppress(EOFError, OSError):
        conn.recv()


MARK_SIGNS = "†‡§◊"


def signs(cell: str) -> str:
    """The marks a cell's text ends with ('3 ‡§◊' → '‡§◊'; '1' → '')."""
    last = cell.replace("**", "").strip().rsplit(" ", 1)[-1]
    return last if last and all(c in MARK_SIGNS for c in last) else ""


def readme_matrix(track: str) -> dict[tuple[str, str], str]:
    """The table between <!-- matrix:TRACK --> and <!-- /matrix:TRACK --> in README.md, as
    (stage folder, scenario) → cell text."""
    text = (ROOT / "README.md").read_text()
    block = re.search(rf"<!-- matrix:{track} -->(.*?)<!-- /matrix:{track} -->", text, re.S)
    assert block, f"README.md has no matrix:{track} block"
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in block.group(1).strip().splitlines()]
    header, body = rows[0], rows[2:]
    cells = {}
    for row in body:
        folder = row[0].strip("[]").split("](")[0]
        for name, value in zip(header[1:], row[1:], strict=True):
            cells[(folder, name)] = value.replace("**", "")
    return cells


def terminal_cells(printed: str) -> dict[tuple[str, str], str]:
    """Every table rich printed in `printed` (box-drawn, one line a row), as (row label, column
    header) → cell text: for `racelab matrix`, (stage, scenario) or, turned, (scenario, stage
    id)."""
    found: dict[tuple[str, str], str] = {}
    header: list[str] = []
    for line in printed.splitlines():
        if line.startswith("┃"):
            header = [c.strip() for c in line.strip("┃").split("┃")]
        elif line.startswith("│") and header:
            row = [c.strip() for c in line.strip("│").split("│")]
            for name, value in zip(header[1:], row[1:], strict=True):
                found[(row[0], name)] = value
    return found


def copy_stage_edited(tmp_path: Path, name: str, path: str, old: str, new: str,
                      imports: tuple[str, str] = ("", ""), stage: str = "03-claim-row") -> Path:
    """A copy of `stage` named `name`, with `old` replaced by `new` in `path` under myapp
    (and an import line replaced)."""
    folder = tmp_path / name
    shutil.copytree(ROOT / stage, folder)
    (folder / ".racelab-from").write_text(stage + "\n")
    source = folder / "myapp" / path
    text = source.read_text()
    assert old in text and imports[0] in text
    source.write_text(text.replace(old, new).replace(*imports))
    return folder


def statements_of(run_json: dict) -> dict[str, list[str]]:
    """Each process's statements, in order, as a step-mode run's history shows them."""
    statements: dict[str, list[str]] = {}
    for op in run_json["history"]:
        if op["f"] == "step":
            statements.setdefault(op["process"], []).append(op["value"]["next"])
    return statements


def model_schedules(statements: dict[str, list[str]], locks: dict[str, bool],
                    bound: int) -> set[str]:
    """Every schedule of processes that run `statements` in order, enumerated on a model of
    PostgreSQL's row locks written apart from the explorer. A statement that starts with a key
    of `locks` locks that key's row to its process's last statement (its COMMIT); with the
    value True only while the row is open: once a transaction that locked it has committed, a
    statement that begins later passes by (an UPDATE whose WHERE no longer matches). Chosen
    while another holds the row, the statement is sent and waits; at the holder's COMMIT any
    one of the waiters goes on, holding the row (an UPDATE's re-check locks the row's new
    version, a DO UPDATE updates it), and the others wait for that one. A preemption is a switch
    away from a process that could have run its next statement (neither waiting nor finished):
    a switch forced by a wait or an end is free, as in CHESS."""
    out: set[str] = set()

    def row(statement: str) -> str | None:
        return next((key for key in locks if statement.startswith(key)), None)

    def walk(at, held, waiting, shut, previous, used, letters):
        blocked = {p for waiters in waiting.values() for p in waiters}
        can = [p for p in sorted(statements) if at[p] < len(statements[p]) and p not in blocked]
        if not can:
            out.add("".join(letters))
            return
        for p in can:
            cost = used + int(previous in can and p != previous)
            if cost > bound:
                continue
            now, holds, waits = dict(at), dict(held), dict(waiting)
            r = row(statements[p][now[p]])
            takes = r is not None and not (locks[r] and r in shut)
            if takes and holds.get(r) not in (None, p):
                waits[r] = waits.get(r, frozenset()) | {p}
                walk(now, holds, waits, shut, p, cost, letters + [p])
                continue
            if takes:
                holds[r] = p
            now[p] += 1
            if now[p] < len(statements[p]):
                walk(now, holds, waits, shut, p, cost, letters + [p])
                continue
            mine = [r for r, holder in holds.items() if holder == p]  # p committed
            for r in mine:
                del holds[r]
            hand(mine, now, holds, waits, shut | set(mine), p, cost, letters + [p])

    def hand(rows, now, holds, waits, shut, previous, used, letters):
        """Each row the committer held goes to any one of its waiters."""
        if not rows:
            return walk(now, holds, waits, shut, previous, used, letters)
        r, rest = rows[0], rows[1:]
        waiters = waits.get(r, frozenset())
        if not waiters:
            return hand(rest, now, holds, waits, shut, previous, used, letters)
        for woken in sorted(waiters):
            hand(rest, {**now, woken: now[woken] + 1}, {**holds, r: woken},
                 {**waits, r: waiters - {woken}}, shut, previous, used, letters)
        return None

    walk({p: 0 for p in statements}, {}, {}, frozenset(), None, 0, [])
    return out


def own_lock_keys(folder: Path) -> Path:
    """`folder`, a copy of a stage whose worker takes one advisory-lock key, made to lock a key
    of each replica's own (the bug of a key derived from something per-process): the lock then
    excludes no one."""
    worker = folder / "myapp" / "worker.py"
    text = worker.read_text()
    assert '{"key": WORKER_LOCK}' in text
    worker.write_text("import os\n" + text.replace(
        '{"key": WORKER_LOCK}', '{"key": WORKER_LOCK + ord(os.environ["REPLICA"][0])}'))
    return folder


def copy_02_without_its_lock(tmp_path: Path) -> Path:
    """Exercise 08's solution applied to a copy of 02: its lock deleted."""
    folder = tmp_path / "08-you-are-the-scheduler"
    shutil.copytree(ROOT / "02-thread-sentinel", folder)
    (folder / ".racelab-from").write_text("02-thread-sentinel\n")
    patch = ROOT / "exercises" / "08-you-are-the-scheduler" / "solution.patch"
    subprocess.run(["git", "apply", "--unsafe-paths", f"--directory={folder}", str(patch)],
                   cwd="/", check=True)
    return folder


def racelab_pid(*args: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, int]:
    """Run the CLI; its result and its process id (to find what it left)."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), proc.pid


def left_by(pid: int, admin_url: str) -> list[str]:
    """The run databases a racelab process (gone now) left in the lab's list."""
    from harness.infra import owned

    return [m.name for m in owned.made(admin_url) if m.pid == pid]


def marked_cell(stage: str, scenario: str) -> str:
    """A matrix cell as the matrix shows it, with its marks: the run of stage × scenario (a
    canonical name of the stage's track, or a scenario file), made once per test process as
    `run` makes it (the same cell replays the same run)."""
    from harness.engine.views import tables

    return tables.marked_cell(run(stage, scenario)).plain


def svg_words(svg: str) -> list[str]:
    """Every text of a picture, sorted: what a stale picture and a fresh one are compared by."""
    return sorted(re.findall(r"<text[^>]*>([^<]*)</text>", svg))


class FieldPicture:
    """A picture docs/field-faults.md shows: one stage × canonical scenario, committed under
    docs/pictures/ and compared by its words with what a fresh run draws; its test module's
    `python -m tests.lab.MODULE` redraws it."""

    DOC = ROOT / "docs" / "field-faults.md"

    def __init__(self, stage: str, scenario_name: str):
        self.stage, self.scenario = stages.resolve(stage), scenario_name
        folder = self.stage.folder.replace("/", "-")
        self.path = ROOT / "docs" / "pictures" / f"field-{folder}.{scenario_name}.svg"

    def draw(self) -> str:
        from harness.engine.views import pictures

        return pictures.svg(cells.run_cell(
            self.stage, scenario.resolve(self.scenario, self.stage.track)))

    def assert_fresh(self, drawn: str | None = None) -> None:
        """The committed picture has the fresh run's words, and the doc shows it."""
        assert svg_words(self.path.read_text()) == svg_words(drawn or self.draw()), (
            f"{self.path.name} is stale: its test module, run with python -m, redraws it")
        assert f"](pictures/{self.path.name})" in self.DOC.read_text()

    def redraw(self) -> None:
        self.path.write_text(self.draw())
        print(f"drew {self.path.relative_to(ROOT)}")
