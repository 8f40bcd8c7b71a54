"""Throughput and scaling figures, measured within one run so they compare with each other.

Nothing here is a test: the figures are printed (or given as JSON) for a person to judge,
with the targets from the backbone issue beside them.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import timedelta

from harness.engine import runner, scenario, stages
from harness.engine.replica import Replica

BACKBONE = ("simultaneous", "staggered", "silent-failure", "crash-after-claim")


@dataclass(frozen=True)
class Figure:
    name: str
    value: float
    unit: str
    note: str = ""

    def to_json(self) -> dict:
        return {"name": self.name, "value": round(self.value, 4), "unit": self.unit,
                "note": self.note}


def _timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def replica_start(stage: stages.Stage, n: int = 10) -> tuple[float, float]:
    """(ms to fork a ready replica, ms for a cold interpreter to import the same modules)."""
    env = {"DATABASE_URL": "postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
           "DB_POOL_SIZE": "1", "PGAPPNAME": "racelab:bench", "REPLICA": "bench"}
    warm = Replica("bench", stage.path, env)
    warm.start()  # the forkserver itself starts once per process; not what a restart costs
    warm.stop()
    forks = []
    for _ in range(n):
        r = Replica("bench", stage.path, env)
        forks.append(_timed(r.start))
        r.stop()
    code = (f"import sys; sys.path.insert(0, {str(stage.path)!r}); "
            "import harness.engine.agent, myapp.worker")
    cold = [_timed(lambda: subprocess.run([sys.executable, "-c", code], check=True,
                                          env={"DATABASE_URL": env["DATABASE_URL"],
                                               "PATH": "/usr/bin:/bin"}))
            for _ in range(3)]
    return statistics.median(forks) * 1000, statistics.median(cold) * 1000


def measure() -> list[Figure]:
    s03 = stages.resolve("03")
    staggered = scenario.resolve("staggered")
    fork_ms, cold_ms = replica_start(s03)
    figures = [
        Figure("replica start (forkserver)", fork_ms, "ms", "fork + import stage + connect"),
        Figure("replica start (cold interpreter)", cold_ms, "ms",
               f"forkserver is {cold_ms / fork_ms:.1f}× faster"),
    ]
    one_run = statistics.median(_timed(lambda: runner.run(s03, staggered)) for _ in range(3))
    figures.append(Figure("one canonical run (03 staggered)", one_run, "s", "target ≤ 2 s"))

    cron = [s for s in stages.stages_of(s03.track) if s.id in ("00", "01", "02", "03")]
    matrix = _timed(lambda: [runner.run(st, scenario.resolve(name)) for st in cron
                             for name in BACKBONE])
    figures.append(Figure(f"matrix 00–03 × {len(BACKBONE)} scenarios", matrix, "s",
                          "target ≤ 15 s for make demo"))

    base = None
    for n in (3, 12, 24):
        t = statistics.median(_timed(lambda n=n: runner.run(s03, staggered.with_replicas(n)))
                              for _ in range(2))
        base = base or t
        figures.append(Figure(f"03 staggered with {n} replicas", t, "s",
                              f"{t / base:.2f}× the 3-replica run"))

    day = _replace_window(staggered, hours=24)
    result = runner.run(s03, day)
    ticks = sum(1 for e in result.events if e.event == "tick")
    figures.append(Figure("ticks per second (03, one day, 3 replicas)",
                          ticks / result.duration_s, "ticks/s", f"{ticks} ticks"))
    return figures


def _replace_window(s: scenario.Scenario, hours: int) -> scenario.Scenario:
    from dataclasses import replace

    return replace(s, name=f"{s.name}-{hours}h", start=s.start - timedelta(hours=hours - 1),
                   end=s.start + timedelta(hours=1))
