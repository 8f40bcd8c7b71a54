"""The project track: a job of the user's own, in a folder of its own (no stage layout), as its
`pyproject.toml` describes it under `[tool.racelab]` (harness.tracks.project.description).

Each replica calls the job at each of the job's slots, as a scheduler in every replica would
(harness.tracks.project.worker); the scenarios say when each replica's scheduler fires and what
strikes it, the project says the slots; the verdict counts each side effect per slot with the
project's own queries. Its one registration."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path

import psycopg

from harness.engine.model import registry
from harness.engine.model.history import Event
from harness.engine.model.scenario import Fault, Scenario
from harness.engine.model.stages import Stage
from harness.engine.model.tracks import SeamRules, Track
from harness.engine.model.world import WORKER_ENV
from harness.engine.run.replica import schema_ddl
from harness.errors import UserError
from harness.tracks.project import checker, description, report

WORLD_KEY = "project"  # the scenario's [world] entry naming the project's folder


class ProjectWorld:
    """The project's seed, if any; the replicas' environment names the job."""

    def __init__(self, conn: psycopg.Connection, s: Scenario, run_id: str):
        self.job = description.read(Path(dict(s.world)[WORLD_KEY][0]))
        self.replicas = s.replicas
        if self.job.seed:
            try:
                conn.execute((self.job.folder / self.job.seed).read_text(encoding="utf-8"))
            except psycopg.Error as e:
                line = (e.diag.message_primary or str(e)).splitlines()[0]
                raise UserError(f"[{description.TABLE}] seed {self.job.seed}: {line}") from None
        checker.check_queries(conn, self.job)
        conn.commit()  # the seed, committed before any replica starts
        self.env = {
            WORKER_ENV: "harness.tracks.project.worker",  # imported in the replica only
            description.JOB_ENV: self.job.job,
            description.DB_ENV: self.job.database_env,
            description.DRIVER_ENV: self.job.driver,
            description.ZONE_ENV: self.job.timezone,
        }

    def due(self, t: datetime) -> list[Event]:
        return []

    def check(self, conn: psycopg.Connection) -> checker.ProjectVerdict:
        return checker.check(conn, self.job, self.replicas)

    def state(self, conn: psycopg.Connection) -> dict:
        return checker.state(conn, self.job)

    def close(self) -> None:
        pass


def _ddl(stage: Stage) -> list[str]:
    """The schema's statements: a .sql file as one, or the models' CREATEs; from a child that
    imports the project either way, and checks the job there first."""
    job = description.read(stage.path)
    unused = f"{job.driver}://unused/unused"  # a module that reads it at import finds one
    key = f"[{description.TABLE}]"
    models = "" if job.schema_file is not None else job.schema
    env = {"DATABASE_URL": unused, job.database_env: unused,
           description.DB_ENV: job.database_env}
    ddl = schema_ddl(stage.path, models, env, ((f"{key} job", job.job),), f"{key} schema",
                     "harness.tracks.project.guard")
    return [job.schema_file.read_text(encoding="utf-8")] if job.schema_file else ddl


def _fit(stage: Stage, s: Scenario) -> Scenario:
    """The scenario on the job's slots: its interval the job's `every`, its window the job's
    slots, its faults moved with its start; the project named in its [world]."""
    job = description.read(stage.path)
    moved = job.start - s.start
    if any(o >= job.every for o in s.offsets):
        raise UserError(f"scenario {s.name!r} starts a replica {max(s.offsets)} after the slot, "
                        f"not within the job's every = {job.every}")
    return replace(s, interval=job.every, start=job.start, end=job.end,
                   faults=tuple(Fault(f.kind, f.at + moved if f.at else None, f.replica)
                                for f in s.faults),
                   world=((WORLD_KEY, (str(stage.path),)),))


def _find_race(stage: Stage, max_examples: int, settings: tuple = ()):
    from harness.tracks.project import search  # hypothesis: imported only when searching

    return search.find_race(stage, max_examples, settings)


TRACK = registry.add_track(Track(
    name="project",
    stage_dir=None,  # a project is a folder named on the command line
    home=Path(__file__).resolve().parent,
    scenario_order=("simultaneous", "staggered", "deploy-restart", "kill-mid-tick",
                    "clock-skew", "pause"),
    default_scenario="staggered",
    open_world=ProjectWorld,
    report=report,
    world_keys={WORLD_KEY: str},
    seams=SeamRules(loggers=(), direct_psycopg=True),
    steppable=True,  # through SQLAlchemy or psycopg, its statements are the seams'
    forks_kept=False,  # the owner's code: what its import opens or starts, nobody checked
    find_race=_find_race,
    claims=description.is_project,
    ddl=_ddl,
    fit=_fit,
))
