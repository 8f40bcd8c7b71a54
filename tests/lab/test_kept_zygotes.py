"""Zygotes kept between the runs of one `keeping` block (harness.engine.run.zygote's `Kept`):
the runs a matrix, a report or a property search plays one after another fork their replicas
from zygotes made at the second clean run of the same stage and environment, and count as runs
whose replicas came from the forkserver."""

from __future__ import annotations

import shutil

import pytest

from harness.engine.model import registry, scenario, stages
from harness.engine.model.tracks import NO_RULES
from harness.engine.run import runner, zygote
from harness.engine.run.zygote import Zygote
from harness.infra import services
from tests.helpers import ROOT


@pytest.fixture
def kept(monkeypatch) -> zygote.Kept:
    """A Kept of the test's own, closed after it, and the replicas each run forked (by name)."""
    own = zygote.Kept()
    monkeypatch.setattr(zygote, "KEPT", own)
    with own.keeping():
        yield own


@pytest.fixture
def forked(monkeypatch) -> list[str]:
    names: list[str] = []
    real = Zygote.ask

    def ask(self, env):
        names.append(env["REPLICA"])
        return real(self, env)

    monkeypatch.setattr(Zygote, "ask", ask)
    return names


@pytest.mark.parametrize("name", ["simultaneous", "deploy-restart", "kill-mid-tick"])
def test_the_third_run_forks_its_replicas_from_zygotes_and_counts_as_the_first(
        pg, kept, forked, name):
    """The first run starts its replicas from the forkserver, the second makes a zygote per
    replica and forks from it, the third forks only; all three count the same. A restart (the
    deploy) takes a fresh process from the forkserver, not a fork; a replica SIGKILLed inside
    its transaction leaves no session behind holding its locks (a zygote lends none)."""
    st = stages.resolve("00" if name == "simultaneous" else "03")
    sc = scenario.resolve(name, "cron")
    verdicts, events, forks = [], [], []
    for _ in range(3):
        forked.clear()
        result = runner.run(st, sc, states=False)
        verdicts.append(result.verdict)
        events.append([e.to_json() for e in result.events])
        forks.append(sorted(forked))
    assert forks == [[], ["A", "B", "C"], ["A", "B", "C"]]
    assert verdicts[1] == verdicts[2] == verdicts[0]
    assert events[1] == events[2] == events[0]


def _env() -> dict[str, str]:
    return {"DATABASE_URL": services.app_url(services.postgres().url, "postgres"),
            "DB_POOL_SIZE": "1", "PGAPPNAME": "racelab:test:A"}


def test_a_zygote_is_made_once_seen_never_shared_closed_after_a_failure_and_the_idle_goes_first(
        pg, kept, monkeypatch):
    """A replica seen in no clean run gets no zygote; one seen gets one, which a second run at
    the same time does not share; a run that failed closes its zygotes; beyond KEPT_MAX the
    idle zygote used longest ago is closed, and one in use never; a run of more than
    KEPT_REPLICAS replicas keeps none."""
    monkeypatch.setattr(zygote, "KEPT_MAX", 1)
    path = stages.resolve("03").path
    assert kept.lease(path, NO_RULES, zygote.KEPT_REPLICAS + 1) is None
    first = kept.lease(path, NO_RULES, 3)
    assert first.zygote("A", _env()) is None and first.zygote("B", _env()) is None
    first.end()
    one, two = kept.lease(path, NO_RULES, 3), kept.lease(path, NO_RULES, 3)
    a = one.zygote("A", _env())
    assert isinstance(a, Zygote)
    assert two.zygote("A", _env()) is None  # in use by `one`
    assert two.zygote("B", _env()) is None  # one zygote at most, and that one is in use
    two.end()
    one.end()
    three = kept.lease(path, NO_RULES, 3)
    b = three.zygote("B", _env())
    assert isinstance(b, Zygote) and a.proc is None  # A's, idle, made room for B's
    three.end(failed=True)
    assert b.proc is None and kept._kept == {}


def _paid(stage: stages.Stage) -> int:
    return runner.run(stage, scenario.resolve("simultaneous", "cron"), states=False
                      ).verdict.slots[0].runs


def test_a_stage_edited_between_two_runs_is_imported_anew(pg, kept, forked, tmp_path,
                                                           monkeypatch):
    """An exercise's stage solved between two checks in one process: the next run's replicas
    import the edited files, not a zygote's copy of the old ones. A folder changed in the last
    SETTLED_NS gets no zygote at all (two writes within one tick of a coarse clock look
    alike); with SETTLED_NS lowered, the edit alone tells the runs apart."""
    folder = tmp_path / "00-edited"
    shutil.copytree(ROOT / "00-the-bug", folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / ".racelab-from").write_text("00-the-bug\n")
    stage = stages.resolve(str(folder))
    assert zygote.files_of(folder) is None  # just written
    monkeypatch.setattr(scenario, "SETTLED_NS", -1)
    assert [_paid(stage) for _ in range(3)] == [3, 3, 3]
    assert sorted(forked) == ["A", "A", "B", "B", "C", "C"]
    worker = folder / "myapp" / "worker.py"
    anchor = ('    """One pass of the loop: decide from the clock what is due, in one '
              'transaction."""\n')
    assert anchor in worker.read_text()
    worker.write_text(worker.read_text().replace(anchor, anchor + "    return\n"))
    forked.clear()
    assert _paid(stage) == 0
    assert forked == []  # the edited stage is seen for the first time


def test_a_run_refused_a_zygote_in_use_leaves_it_to_the_run_using_it(pg, kept):
    """Two runs at once asking for the same replica's zygote (which the database in the key
    keeps apart in the lab, but not in Kept itself): the second starts from the forkserver, and
    its end, even a failure, neither frees nor closes the zygote the first is using."""
    path = stages.resolve("03").path
    seen = kept.lease(path, NO_RULES, 3)
    assert seen.zygote("A", _env()) is None
    seen.end()
    using, refused = kept.lease(path, NO_RULES, 3), kept.lease(path, NO_RULES, 3)
    a = using.zygote("A", _env())
    assert isinstance(a, Zygote) and refused.zygote("A", _env()) is None
    refused.end(failed=True)
    assert a.proc is not None and a.proc.is_alive()
    assert kept.lease(path, NO_RULES, 3).zygote("A", _env()) is None  # still `using`'s
    using.end()
    again = kept.lease(path, NO_RULES, 3)
    assert again.zygote("A", _env()) is a
    again.end()


def test_a_projects_replicas_never_fork_from_a_kept_zygote(pg, kept, forked, tmp_path):
    """The project track says forks_kept=False: the owner's code may open or start something at
    import (a socket, a thread, an id) that each fresh process would have its own of."""
    folder = tmp_path / "digest-bug"
    shutil.copytree(ROOT / "examples" / "digest-bug", folder)
    stage = stages.resolve(str(folder))
    assert stage.track == "project"
    sc = registry.track("project").fit(stage, scenario.resolve("simultaneous", "project"))
    for _ in range(3):
        runner.run(stage, sc, states=False)
    assert forked == [] and kept._kept == {}


def test_outside_a_keeping_block_nothing_is_kept_and_its_end_closes_every_zygote(pg):
    """A lone run, or runs here and there, keep nothing; when the block ends, its zygotes go."""
    own, path = zygote.Kept(), stages.resolve("03").path
    assert own.lease(path, NO_RULES, 3) is None
    with own.keeping():
        for _ in range(2):
            lease = own.lease(path, NO_RULES, 3)
            a = lease.zygote("A", _env())
            lease.end()
        assert isinstance(a, Zygote) and a.proc is not None
    assert a.proc is None and own.lease(path, NO_RULES, 3) is None
