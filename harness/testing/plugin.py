"""racelab's pytest plugin (the `pytest11` entry point: installing racelab is enough).

- the `racelab` fixture: a handle on the project under test (harness.testing.lab.Lab), by
  default the folder of pytest's rootdir, whose pyproject.toml describes the job under
  [tool.racelab]; `racelab.run(...)`, `racelab.explore(...)`;
- `@pytest.mark.racelab_scenarios("simultaneous", …)`: the test once per scenario (every one of
  the project track when none is named), as `racelab_scenario`, with the names as test ids;
- `--racelab-seed N`, `--racelab-replay SCHEDULE`, `--racelab-project DIR`.

Nothing of the engine is imported until a test asks for the fixture: a pytest session that
uses none of it pays nothing for the plugin.
"""

from __future__ import annotations

from pathlib import Path

import pytest

MARKER = "racelab_scenarios"
LAB = pytest.StashKey[object]()  # the test's Lab, for its failure report


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("racelab", "racelab: a job of your own under the lab")
    group.addoption("--racelab-project", metavar="DIR", default=None,
                    help="the project whose pyproject.toml describes the job (default: the "
                    "rootdir)")
    group.addoption("--racelab-seed", metavar="N", type=int, default=None,
                    help="the seed of every run (default: each scenario's)")
    group.addoption("--racelab-replay", metavar="SCHEDULE", default=None,
                    help="runs replay this schedule (one an exploration or a failure printed)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(*names): run the test once per scenario of "
                            "the project track (all when none is named), given as the "
                            "racelab_scenario argument; the test ids are the names")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None:
        return
    names = list(marker.args)
    if not names:
        from harness.engine.model import scenario

        names = [s.name for s in scenario.canonical("project")]
    if "racelab_scenario" in metafunc.fixturenames:  # through `racelab`, or asked for
        metafunc.parametrize("racelab_scenario", names, ids=names, indirect=True)


@pytest.fixture
def racelab_scenario(request: pytest.FixtureRequest) -> str | None:
    """The scenario of this test's runs: the marker's, one per test; None: the default."""
    return getattr(request, "param", None)


@pytest.fixture
def racelab(request: pytest.FixtureRequest, racelab_scenario: str | None):
    """A handle on the project under test: `racelab.run(scenario=…, replicas=…)` and
    `racelab.explore(preemptions=…)` (docs/own-job.md)."""
    from harness.errors import UserError
    from harness.testing.lab import Lab

    config = request.config
    folder = Path(config.getoption("racelab_project") or config.rootpath)
    refused = None
    try:
        lab = Lab(folder, config.getoption("racelab_seed"), config.getoption("racelab_replay"),
                  racelab_scenario)
    except UserError as e:
        refused = str(e)
    if refused is not None:  # outside the except: the report shows the line, no chain
        pytest.fail(f"racelab: {refused}", pytrace=False)
    request.node.stash[LAB] = lab
    return lab


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failed test that used the lab: what each of its runs did (the timeline) and the
    command replaying it, and each bad outcome of its explorations with the command replaying
    its shortest schedule, as a section of the failure's report."""
    report = yield
    lab = item.stash.get(LAB, None)
    if report.when == "call" and report.failed and lab is not None and lab.told:
        report.sections.append(("racelab: the runs and explorations of this test",
                                "\n\n".join(lab.told)))
    return report
