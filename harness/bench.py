"""How fast the lab is, measured in one sitting so the figures compare with each other.

From the floor up: a raw psycopg transaction holding one advisory lock, the stage's own tick
called in a loop in one process, the same ticks through the harness (a simulated week), then
what a user waits for: a replica's start and restart, one stage's matrix row, the whole demo,
runs with more replicas, and the property search. Nothing here is a test: the figures are for
a person to judge, each beside its target. `quick` measures less of each (a day, not a week;
fewer cells and examples) so a test can check the shape in seconds; its figures are not the
targets' figures.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import psycopg
from rich.table import Table

from harness.engine.model import registry, scenario, stages
from harness.engine.model.clock import tick_plan
from harness.engine.run import cells, runner
from harness.engine.run.replica import Replica, schema_ddl
from harness.infra import rundb, services

WEEK = timedelta(days=7)
SCALING = (3, 10, 25, 50)
TARGETS = {  # the targets on a 2-core machine; None: shown for reference
    "raw_claim_tx_per_s": None, "stage_inprocess_ticks_per_s": None,
    "harness_ticks_per_s": "≥ in-process ÷ 1.1 (harness adds ≤ 10 %)",
    "week_wall_s": "≤ 3 s each", "time_compression": "≥ 201,600× (a week in 3 s)",
    "replica_start_ms": None, "restart_ms": None, "stage_row_wall_s": "≤ 5 s (make stage-03)",
    "demo_wall_s": "≤ 30 s (make demo)", "scaling": "no worse than linear, 0 duplicates",
    "property_examples_per_s": None,
    "pipe_rtt_us": None, "step_us": None, "step_handoff_us": "≤ 10 pipe round trips",
    "schedules_per_s": "≥ 20 (03, 2 replicas, simultaneous)",
    "explore_wall_s": "≤ 120 s (03, 3 replicas, ≤ 2 preemptions)",
    "explore_schedules": None,
    "reduced_wall_s": "beside explore_wall_s: the reduction (dpor), the same stage and bound",
    "reduced_schedules": "beside explore_schedules: one a class",
}

_LOOP = r'''
import asyncio, sys, time
from datetime import datetime, timedelta
sys.path.insert(0, sys.argv[1])
import myapp.worker as worker
start, n = datetime.fromisoformat(sys.argv[2]), int(sys.argv[3])
async def main():
    began = time.perf_counter()
    for i in range(n):
        await worker.tick(start + i * timedelta(minutes=5))
    return n / (time.perf_counter() - began)
print(asyncio.run(main()))
'''


def _timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _week(quick: bool) -> scenario.Scenario:
    week = scenario.resolve("week", "cron")
    return replace(week, end=week.start + timedelta(days=1)) if quick else week


def raw_claim_tx_per_s(url: str, n: int) -> float:
    """The floor: one transaction holding one advisory lock, plain psycopg, BEGIN/COMMIT each."""
    with psycopg.connect(services.libpq_url(url), autocommit=True) as conn:
        began = time.perf_counter()
        for _ in range(n):
            with conn.transaction():
                conn.execute("SELECT pg_try_advisory_xact_lock(7244001)").fetchone()
        return n / (time.perf_counter() - began)


def inprocess(stage: stages.Stage, week: scenario.Scenario) -> tuple[float, float]:
    """(raw tx/s, the stage's own tick()/s in one process) on a database seeded as a run's."""
    pg = services.postgres()
    name = rundb.acquire(pg.url, schema_ddl(stage.path))
    ended = False
    try:
        url = services.app_url(pg.url, name)
        with psycopg.connect(services.libpq_url(url)) as conn:
            registry.track(stage.track).open_world(conn, week, "bench").close()
            conn.commit()
        raw = raw_claim_tx_per_s(url, 300 if week.end - week.start < WEEK else 1000)
        ticks = len(tick_plan(week))
        out = subprocess.run(
            [sys.executable, "-c", _LOOP, str(stage.path), week.start.isoformat(), str(ticks)],
            check=True, capture_output=True, text=True,
            env={**os.environ, "DATABASE_URL": url, "DB_POOL_SIZE": "1"}).stdout
        ended = True
    finally:
        (rundb.release if ended else rundb.discard)(pg.url, name)
    return raw, float(out)


def replica_start_and_restart(stage: stages.Stage, n: int) -> tuple[float, float]:
    """Median ms for a ready replica (fork + the stage's imports + connect), and for a
    restart as deploy-restart does it (stop, then a fresh process ready)."""
    env = {"DATABASE_URL": services.app_url(services.postgres().url, "postgres"),
           "DB_POOL_SIZE": "1", "PGAPPNAME": "racelab:bench", "REPLICA": "bench"}
    warm = Replica("bench", stage.path, env)
    warm.start()  # the forkserver itself starts once per process
    starts, restarts = [], []
    try:
        for _ in range(n):
            restarts.append(_timed(lambda: (warm.stop(), warm.start())))
            fresh = Replica("bench", stage.path, env)
            starts.append(_timed(fresh.start))
            fresh.stop()
    finally:
        warm.stop()
    return statistics.median(starts) * 1000, statistics.median(restarts) * 1000


def _echo(conn) -> None:
    """A child that answers each message at once: the floor of a hand-off."""
    while (msg := conn.recv()) is not None:
        conn.send(msg)


def pipe_rtt_us(n: int) -> float:
    """Median µs for a bare multiprocessing pipe round trip to a forkserver child."""
    from harness.engine.run.replica import context, start_process

    ctx = context()
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_echo, args=(child,), daemon=True)
    start_process(proc)
    child.close()
    times = []
    try:
        for i in range(n):
            began = time.perf_counter()
            parent.send(i)
            parent.recv()
            times.append(time.perf_counter() - began)
    finally:
        parent.send(None)
        proc.join(5)
        parent.close()
    return statistics.median(times) * 1e6


# step mode's runs whose steps give step_us its median: one run has ~16, and their median moved
# by a quarter from one bench to the next in one sitting
STEP_RUNS, STEP_RUNS_QUICK = 10, 3


def stepping(quick: bool) -> dict:
    """Step mode on 03 over simultaneous: a step's median µs from a release to the next hold
    (2 replicas, over STEP_RUNS runs), and of it the hand-off, the lab's share: the step less
    the app's own code and SQL as the replica timed them, its hooks' time (Held.seam_ns) left
    in; explored schedules per second (2 replicas, ≤ 2 preemptions) and the wall time of the
    3-replica proof (≤ 2 preemptions; with `quick` 2 replicas, ≤ 1), and beside it the
    reduction's on the same stage and bound: schedules and seconds."""
    from harness.engine.explore import dfs, dpor, steps

    s03, sim = stages.resolve("03"), scenario.resolve("simultaneous", "cron")
    steps_s, handoffs = [], []
    for _ in range(STEP_RUNS_QUICK if quick else STEP_RUNS):
        stepper = steps.Stepper(dfs.Prefix([]))
        runner.run(s03, sim.with_replicas(2), interleaver=stepper)
        steps_s += stepper.steps_s
        handoffs += stepper.handoffs
    two = dfs.explore(s03, sim.with_replicas(2), 1 if quick else 2)
    proof = two if quick else dfs.explore(s03, sim.with_replicas(3), 2)
    reduced = dpor.explore(s03, sim.with_replicas(proof.replicas), 1 if quick else 2)
    return {"step_us": round(statistics.median(steps_s) * 1e6, 1),
            "step_handoff_us": round(statistics.median(handoffs) * 1e6, 1),
            "schedules_per_s": round(len(two.explored) / two.seconds, 2),
            "explore_wall_s": round(proof.seconds, 2),
            "explore_schedules": len(proof.explored),
            "reduced_wall_s": round(reduced.seconds, 2),
            "reduced_schedules": len(reduced.explored)}


def _ticks(result: runner.RunResult) -> int:
    return sum(1 for e in result.events if e.event in ("tick", "task"))


def measure(quick: bool = False) -> dict:
    s03, s05 = stages.resolve("03"), stages.resolve("05")
    week = _week(quick)
    load = os.getloadavg()[0]
    raw, inproc = inprocess(s03, week)
    # as `racelab run STAGE --scenario week` takes it, its table: no view reads states
    weeks = {st.id: runner.run(st, week, states=False) for st in (s03, s05)}
    harness = _ticks(weeks["03"]) / weeks["03"].duration_s
    start_ms, restart_ms = replica_start_and_restart(s03, 3 if quick else 10)

    row = [c for c in cells.of("cron") if c.stage.id == "03"]
    demo = cells.of("cron") + cells.of("alerts")
    if quick:  # the short cells of one row, and as the demo the row once more
        row = demo = [c for c in row if c.scenario.name != "week"][:3]
    row_s = _timed(lambda: cells.run_all(row, states=False))  # as `racelab matrix` runs them
    demo_s = _timed(lambda: cells.run_all(demo, states=False))

    staggered = scenario.resolve("staggered", "cron")
    runner.run(s03, staggered)  # warm: its database and schema, as every later run finds them
    scaling = []
    for n in SCALING[:2] if quick else SCALING:
        r = runner.run(s03, staggered.with_replicas(n))
        scaling.append({"replicas": n, "wall_s": round(r.duration_s, 3),
                        "duplicates": r.verdict.duplicates})

    search = registry.track("cron").find_race(s03, 3 if quick else 20)
    rtt = pipe_rtt_us(200 if quick else 2000)
    step = stepping(quick)
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"host": platform.node(), "cpus": os.cpu_count(),
                    "python": platform.python_version(), "load_at_start": round(load, 2),
                    "load_at_end": round(os.getloadavg()[0], 2)},
        "quick": quick,
        "week_days": (week.end - week.start).days,
        "raw_claim_tx_per_s": round(raw, 1),
        "stage_inprocess_ticks_per_s": round(inproc, 1),
        "harness_ticks_per_s": round(harness, 1),
        "week_wall_s": {k: round(r.duration_s, 3) for k, r in weeks.items()},
        "time_compression": round((week.end - week.start).total_seconds()
                                  / weeks["03"].duration_s, 1),
        "replica_start_ms": round(start_ms, 1),
        "restart_ms": round(restart_ms, 1),
        "stage_row_wall_s": round(row_s, 3),
        "demo_wall_s": round(demo_s, 3),
        "scaling": scaling,
        "property_examples_per_s": round(search.examples / search.seconds, 3),
        "pipe_rtt_us": round(rtt, 1),
        **step,
        "targets": TARGETS,
    }


def _shown(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    if isinstance(value, list):  # scaling
        return ", ".join(f"{s['replicas']} → {s['wall_s']:.2f} s ({s['duplicates']} dup)"
                         for s in value)
    return f"{value:,}"


def met(key: str, data: dict) -> str:
    """Whether the figure meets its target in this sitting: yes, no, or "" for no target."""
    v = data[key]
    checks = {
        "harness_ticks_per_s": lambda: v >= data["stage_inprocess_ticks_per_s"] / 1.1,
        "week_wall_s": lambda: all(s <= 3 for s in v.values()),
        "time_compression": lambda: v >= 201_600,
        "stage_row_wall_s": lambda: v <= 5,
        "demo_wall_s": lambda: v <= 30,
        "scaling": lambda: all(s["duplicates"] == 0 and s["wall_s"] / v[0]["wall_s"]
                               <= s["replicas"] / v[0]["replicas"] for s in v),
        "step_handoff_us": lambda: v <= 10 * data["pipe_rtt_us"],
        "schedules_per_s": lambda: v >= 20,
        "explore_wall_s": lambda: v <= 120,
    }
    return ("yes" if checks[key]() else "no") if key in checks else ""


def table(data: dict) -> Table:
    """Each figure beside its target."""
    m = data["machine"]
    title = (f"racelab bench · {data['date']} · {m['host']}, {m['cpus']} cores, load "
             f"{m['load_at_start']}–{m['load_at_end']}"
             + (" · --quick: less work, not the targets' figures" if data["quick"] else ""))
    t = Table(title=title, title_justify="left")
    t.add_column("figure", no_wrap=True)
    t.add_column("measured", justify="right")
    t.add_column("target", style="dim")
    t.add_column("met")
    for key, target in TARGETS.items():
        t.add_row(key, _shown(data[key]), target or "—", met(key, data))
    return t


def markdown(data: dict) -> str:
    """The README's performance section: each figure beside its target, the sitting named."""
    m = data["machine"]
    lines = [f"Measured by `.venv/bin/racelab bench --json` on {data['date'][:10]} ({m['host']}: "
             f"{m['cpus']} cores, Python {m['python']}, load {m['load_at_start']}–"
             f"{m['load_at_end']} from other work), written here by `make perf-readme`.", "",
             "| figure | measured | target | met |", "|---|---:|---|---|"]
    lines += [f"| `{key}` | {_shown(data[key])} | {target or '—'} | {met(key, data)} |"
              for key, target in TARGETS.items()]
    return "\n".join(lines) + "\n"
