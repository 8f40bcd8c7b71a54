"""User-written scenario files, read without running them: defaults, durations, round trips.
What each key does to a run, and what a bad file prints, are in tests/cli/test_scenario_runs.py."""

from __future__ import annotations

import os
import tomllib
from datetime import timedelta
from pathlib import Path

import pytest

from harness.engine.model import scenario
from harness.engine.model.scenario import format_duration, parse_duration


def _write(tmp_path: Path, text: str, name: str = "mine.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_missing_offsets_and_skew_spread_replicas_evenly_with_true_clocks(tmp_path):
    """Without offsets the replicas start spread over one interval; without skew, clocks agree."""
    path = _write(tmp_path, 'name = "x"\nreplicas = 3\nstart = "2026-05-29T18:00:00-06:00"\n'
                            'end = "2026-05-29T18:15:00-06:00"\n')
    s = scenario.load_file(path)
    assert [format_duration(o) for o in s.offsets] == ["0s", "5m", "10m"]
    assert s.skew == (timedelta(0),) * 3
    assert (s.track, s.interval, s.seed, s.faults) == ("cron", timedelta(minutes=15), 7, ())


@pytest.mark.parametrize(("name", "n", "offsets"), [
    ("staggered", 5, ["0s", "1m", "2m", "3m", "4m"]),  # a minute apart goes on a minute apart
    ("staggered", 2, ["0s", "1m"]),
    ("staggered", 17, [f"{i % 15}m" if i % 15 else "0s" for i in range(17)]),  # a phase
    ("simultaneous", 4, ["0s"] * 4),
    ("deploy-restart", 4, ["0s", "3m", "6m", "9m"]),
    ("no offsets", 4, ["0s", "3m45s", "7m30s", "11m15s"]),  # spread evenly, spread again
])
def test_more_replicas_continue_the_scenarios_offset_pattern(name, n, offsets):
    """`--replicas N` keeps the scenario's pattern: extra replicas continue its step."""
    s = scenario.from_dict({"name": name, "replicas": 2, "start": "2026-05-29T18:00:00-06:00",
                            "end": "2026-05-29T18:15:00-06:00"}) if name == "no offsets" else (
        scenario.resolve(name))
    s = s.with_replicas(n)
    assert [format_duration(o) for o in s.offsets] == offsets
    assert len(s.skew) == n


@pytest.mark.parametrize(("text", "seconds"), [
    ("90s", 90), ("15m", 900), ("2h", 7200), ("1d", 86400), ("-40s", -40), ("+40s", 40),
    ("1m30s", 90), ("1d2h3m4s", 93784), ("0.5s", 0.5),
])
def test_durations_use_s_m_h_d_and_read_back_as_written(text, seconds):
    """Each unit, a sign and a compound parse to the right length, and format back to it."""
    d = parse_duration(text)
    assert d.total_seconds() == seconds
    assert parse_duration(format_duration(d, signed=True)) == d


def test_canonical_scenarios_survive_a_round_trip_through_toml():
    """The files users copy: writing a canonical scenario out and loading it gives it back."""
    for s in scenario.canonical():
        again = scenario.from_dict(tomllib.loads(scenario.to_toml(s)), s.source)
        assert again == s, s.name


def test_each_track_keeps_its_own_scenario_order_when_another_track_lists_the_same_names():
    """The detours track lists simultaneous, staggered and pause in an order of its own: the cron
    matrix still opens with simultaneous and staggered, in cron's order."""
    from harness.engine.model import registry

    for track in ("cron", "detours"):
        names = [s.name for s in scenario.canonical(track)]
        assert names == list(registry.track(track).scenario_order), track


def test_a_step_scenario_resolves_for_its_track_and_is_no_matrix_column():
    """The alerts track's `simultaneous` (scenarios/steps/): found by name on the alerts track
    for step, explore and `run --schedule`; not canonical, so its matrix is unchanged; the
    cron track's `simultaneous` is still cron's."""
    mine = scenario.resolve("simultaneous", "alerts")
    assert (mine.track, mine.replicas, set(mine.offsets)) == ("alerts", 2, {timedelta(0)})
    assert "simultaneous" not in [s.name for s in scenario.canonical("alerts")]
    assert scenario.resolve("simultaneous").track == "cron"
    assert scenario.resolve("simultaneous", "cron").track == "cron"


def test_a_settled_file_is_parsed_once_and_read_again_once_it_changes(tmp_path, monkeypatch):
    """The canonical scenarios are read for every run's marks: a file left alone for a while is
    parsed once per process. A file written moments ago is read again each time, also with its
    old mtime put back (as `cp -p` or `tar` do: its ctime is new), however coarse the
    filesystem's clock."""
    text = ('name = "x"\nreplicas = 2\nstart = "2026-05-29T18:00:00-06:00"\n'
            'end = "2026-05-29T18:15:00-06:00"\nseed = 1\n')
    path = _write(tmp_path, text)
    assert scenario.load_file(path) is not scenario.load_file(path)  # written moments ago
    old = path.stat().st_mtime_ns - 10 * scenario.SETTLED_NS
    os.utime(path, ns=(old, old))
    assert scenario.load_file(path) is not scenario.load_file(path)  # an old mtime alone
    settled_after = scenario.SETTLED_NS
    monkeypatch.setattr(scenario, "SETTLED_NS", -1)  # as if it had been left alone since
    settled = scenario.load_file(path)
    assert scenario.load_file(path) is settled
    monkeypatch.setattr(scenario, "SETTLED_NS", settled_after)
    path.write_text(text.replace("seed = 1", "seed = 2"))  # the same size
    os.utime(path, ns=(old, old))
    assert scenario.load_file(path).seed == 2
