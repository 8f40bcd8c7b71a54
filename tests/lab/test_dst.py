"""Daylight saving time (issue 40, part 1): an app configured to close the week Sunday 02:00 in
Europe/Berlin (the lab's choice, hence §) meets its close twice the night the clocks go back and
never the night they go forward. Counted from the database, as every cell; the table in
docs/field-faults.md is recomputed here."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pytest

from harness.engine.model import scenario as scenarios
from harness.engine.model import stages
from harness.engine.model.history import F, Type
from harness.engine.run import cells, runner
from harness.engine.views import tables
from harness.schedulers.eventbridge import dst_passes
from harness.tracks.cron import schedule
from harness.tracks.cron.picture import payouts
from tests.helpers import ROOT, FieldPicture, one_line_exit_2, racelab, schema_validator

DOC = ROOT / "docs" / "field-faults.md"
PICTURE = FieldPicture("00", "dst-fall-back")
STAGES = ("00", "01", "02", "03", "04", "05")
NAMES = ("dst-fall-back", "dst-spring-forward")


def run(stage: str, name: str):
    return runner.run(stages.resolve(stage), scenarios.resolve(name, "cron"))


def paid_at(result) -> list[str]:
    """The clock reading (as the replica was told it) of each start that paid."""
    ops = result.history.ops_in_order()
    told = []
    for i, _ in payouts(ops):
        start = next(op for op in reversed(ops[:i]) if op.process == ops[i].process
                     and op.f in (F.TICK, F.TASK) and op.type is Type.INVOKE)
        told.append(start.value["now"])
    return told


def test_the_fall_back_pays_twice_on_00_with_one_replica_and_once_on_05(pg):
    """00's one replica reads 02:00 summer time, pays, and an hour later reads 02:00 winter time
    and pays again; 05's schedule fires the repeated time once, as AWS documents."""
    r00 = run("00", "dst-fall-back")
    assert r00.scenario.replicas == 1
    assert (r00.verdict.runs, r00.verdict.duplicates, r00.verdict.missed) == (2, 1, 0)
    assert paid_at(r00) == ["2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00"]
    first, second = (datetime.fromisoformat(t) for t in paid_at(r00))
    assert (second - first).total_seconds() == 3600
    r05 = run("05", "dst-fall-back")
    assert (r05.verdict.runs, r05.verdict.duplicates, r05.verdict.missed) == (1, 0, 0)
    said = [e.detail for e in r05.events if e.event == "dst"]
    assert said == ["leaderboard_close: cron(0 2 ? * SUN *): 02:00 on 2026-10-25 comes again in "
                    "Europe/Berlin (the clocks go back): it fired the first time only"]


def test_the_spring_forward_misses_the_week_on_05_as_aws_documents(pg):
    """The clocks jump from 02:00 to 03:00: the scheduler skips the time that does not exist,
    says so, and the week is never paid; 00's loop never sees its window either."""
    r05 = run("05", "dst-spring-forward")
    assert (r05.verdict.runs, r05.verdict.missed) == (0, 1)
    assert [e.detail for e in r05.events if e.event == "dst"] == [
        "leaderboard_close: cron(0 2 ? * SUN *): 02:00 on 2026-03-29 does not exist in "
        "Europe/Berlin (the clocks jump past it): it does not fire"]
    assert not [e for e in r05.events if e.event == "deliver"]
    r00 = run("00", "dst-spring-forward")
    readings = [e.detail for e in r00.events if e.event == "tick"]
    assert readings == [f"its clock reads Sun {t}" for t in (
        "01:30:00 CET", "01:45:00 CET", "03:00:00 CEST", "03:15:00 CEST")]
    assert (r00.verdict.runs, r00.verdict.missed) == (0, 1)


def table() -> str:
    rows = ["| stage | dst-fall-back | dst-spring-forward |", "|---|---:|---:|"]
    for stage in STAGES:
        st = stages.resolve(stage)
        marked = [tables.marked_cell(cells.run_cell(st, scenarios.resolve(n, "cron")))
                  for n in NAMES]
        rows.append(f"| [{st.path.name}](../{st.path.name}/) | "
                    f"{' | '.join(c.plain for c in marked)} |")
    return "\n".join(rows)


def test_the_dst_table_in_the_field_faults_doc_is_measured(pg):
    """Every cell of docs/field-faults.md's DST table, recomputed (a § on each: the zone, the
    close and the nights are the lab's); bold marks a cell that is not 1, as in the README."""
    said = re.search(r"<!-- dst:table -->\n(.*?)\n<!-- /dst:table -->", DOC.read_text(), re.S)
    assert said is not None
    assert said.group(1).replace("**", "") == table()


def test_a_configured_close_reaches_the_stages_and_the_default_tells_them_nothing():
    """The stages read their zone and close from the environment; the canonical scenarios
    without a [world] table leave them at the stages' own Friday 18:00 in Mexico City."""
    fall = schedule.of(scenarios.resolve("dst-fall-back", "cron"))
    assert fall.env == {"APP_TIMEZONE": "Europe/Berlin", "LEADERBOARD_CLOSE": "SUN 02:00"}
    assert schedule.of(scenarios.resolve("staggered", "cron")).env == {}
    for stage in STAGES:
        code = "".join(p.read_text() for p in stages.resolve(stage).path.rglob("*.py"))
        assert 'os.environ.get("APP_TIMEZONE", "America/Mexico_City")' in code, stage
        assert 'os.environ.get("LEADERBOARD_CLOSE", "FRI 18:00")' in code, stage


def test_the_close_is_due_once_a_week_at_the_first_of_a_repeated_time_and_after_a_skip():
    close = schedule.of(scenarios.resolve("dst-fall-back", "cron"))
    fall = close.closes(datetime.fromisoformat("2026-10-18T00:00:00+00:00"),
                        datetime.fromisoformat("2026-11-02T00:00:00+00:00"))
    assert [t.isoformat() for t in fall] == ["2026-10-17T18:00:00-06:00",  # 02:00 CEST
                                             "2026-10-24T18:00:00-06:00",  # CEST, the first
                                             "2026-10-31T19:00:00-06:00"]  # 02:00 CET
    spring = close.closes(datetime.fromisoformat("2026-03-28T00:00:00+00:00"),
                          datetime.fromisoformat("2026-03-30T00:00:00+00:00"))
    assert [t.isoformat() for t in spring] == ["2026-03-28T19:00:00-06:00"]  # 03:00 CEST


def test_the_emulated_scheduler_names_each_time_a_dst_change_skips_or_repeats():
    start = datetime.fromisoformat("2026-01-01T00:00:00+00:00")
    end = datetime.fromisoformat("2027-01-01T00:00:00+00:00")
    passes = dst_passes("cron(30 2 ? * SUN *)", "Europe/Berlin", start, end)
    assert [(t.isoformat(), "not exist" in w) for t, w in passes] == [
        ("2026-03-29T03:30:00+02:00", True), ("2026-10-25T02:30:00+01:00", False)]
    assert dst_passes("cron(0 18 ? * FRI *)", "America/Mexico_City", start, end) == []
    assert dst_passes("rate(1 hour)", "Europe/Berlin", start, end) == []


@pytest.mark.parametrize(("world", "words"), [
    ('timezone = "Europe/Berlín"', "not a time zone of the tz database"),
    ('timezone = "../../etc/passwd"', "not a time zone of the tz database"),
    ('close = "SUN 02:30"', "whole hour"),
    ('close = "SUNDAY 02:00"', "whole hour"),
    ('close = ["SUN 02:00", "SAT 02:00"]', "one value, not 2"),
    ('close = "MON 02:00"', "from FRI to SUN"),
    ('close = "sun 2:00"', "whole hour"),
    ('close = "SUN 02:00:00.5"', "whole hour"),
])
def test_a_bad_world_close_or_zone_is_one_line_and_exit_2(pg, tmp_path: Path, world, words):
    text = (ROOT / "harness/tracks/cron/scenarios/dst-fall-back.toml").read_text()
    path = tmp_path / "bad.toml"
    path.write_text(text.split("[world]")[0] + "[world]\n" + world + "\n")
    out = racelab("run", "00", "--scenario", str(path))
    one_line_exit_2(out, words, f"{path}: world.")  # said as the file is read, naming it


def test_the_picture_of_dst_fall_back_is_not_stale(pg):
    """docs/field-faults.md shows 00 under dst-fall-back: the two payouts an hour apart; a fresh
    run draws the same words (`python -m tests.lab.test_dst` redraws it)."""
    PICTURE.assert_fresh()


if __name__ == "__main__":  # redraw the picture docs/field-faults.md shows
    PICTURE.redraw()


def test_a_run_s_json_names_the_configured_zone_and_close_and_each_start_s_clock(pg):
    """What the run was configured with is in its JSON (the [world] table), and each tick's
    `now` is the replica's clock as its app read it, with that zone's offset of the moment."""
    out = racelab("run", "00", "--scenario", "dst-fall-back", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    schema_validator().validate(data)
    assert data["world"] == {"timezone": ["Europe/Berlin"], "close": ["SUN 02:00"]}
    told = [op["value"]["now"][11:] for op in data["history"]
            if op["f"] == "tick" and op["type"] == "invoke"]
    assert told[2] == "02:00:00+02:00" and told[6] == "02:00:00+01:00"


def test_a_close_outside_the_hours_the_clocks_change_or_a_zone_without_dst_pays_once(pg, tmp_path):
    """What docs/field-faults.md says fixes it: Berlin at 03:00 on the fall-back night, and the
    close at 01:00 UTC on the spring night, each come once: 00, with no guard at all, pays 1."""
    base = ROOT / "harness/tracks/cron/scenarios"
    for name, world in (("dst-fall-back", 'timezone = "Europe/Berlin"\nclose = "SUN 03:00"'),
                        ("dst-spring-forward", 'timezone = "UTC"\nclose = "SUN 01:00"')):
        text = (base / f"{name}.toml").read_text().split("[world]")[0]
        path = tmp_path / f"{name}.toml"
        path.write_text(text.replace(f'name = "{name}"', f'name = "{name}-elsewhere"')
                        + "[world]\n" + world + "\n")
        v = runner.run(stages.resolve("00"), scenarios.resolve(str(path), "cron")).verdict
        assert (v.runs, v.duplicates, v.missed) == (1, 0, 0), name
