"""A plugin's optional hooks are declared once with their defaults (harness.engine.model's
REPORT, WORLD, SCHEDULER): an object is checked against the declaration where the engine gets
it, and a hook it lacks is its default, never probed for where it is called."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.engine.model.registry import Hook, Spec
from harness.engine.model.schedulers import SCHEDULER, WAKE
from harness.engine.model.tracks import OUTCOME_WORDS, PICTURE_STATE, REPORT, Track
from harness.engine.model.world import AGAIN, STATE, WORLD
from harness.errors import UserError


class _Report:
    MATRIX_CAPTION, LABELS = "", {}

    def run_table(self, result): ...

    def cell(self, result): ...

    def findings(self, result): ...


def _track(report) -> Track:
    return Track(name="toy", stage_dir="toy", home=Path("."), scenario_order=(),
                 default_scenario="x", open_world=lambda conn, s, run_id: None, report=report)


def test_a_track_whose_report_lacks_a_required_member_is_refused_where_it_is_declared():
    """A report without `cell` is one UserError naming the track and what is missing."""
    class NoCell:
        MATRIX_CAPTION, LABELS = "", {}

        def run_table(self, result): ...

        def findings(self, result): ...
    with pytest.raises(UserError, match=r"^track 'toy': its report has no cell$"):
        _track(NoCell())


def test_an_optional_hook_that_cannot_take_its_declared_arguments_is_refused():
    """picture_state(value) declared with one argument: a report's picture_state() of none is
    refused when the track is declared, not when a picture is first drawn."""
    class Wrong(_Report):
        def picture_state(self):
            return "", {}
    with pytest.raises(UserError, match=r"picture_state cannot be called with \(value\)"):
        _track(Wrong())


def test_a_missing_optional_hook_is_its_declared_default():
    """A report with neither RUN_WORD nor outcome_words words an outcome as 'N runs'; one with
    RUN_WORD 'payout' as 'N payouts'; a world without state reads None; a scheduler without
    wake takes the call and does nothing."""
    class Payouts(_Report):
        RUN_WORD = "payout"
    two = SimpleNamespace(runs=2)
    assert OUTCOME_WORDS.of(_Report())(two) == "2 runs"
    assert OUTCOME_WORDS.of(Payouts())(two) == "2 payouts"
    assert PICTURE_STATE.of(_Report())(5) == ("", {})
    assert STATE.of(object())(None) is None
    assert AGAIN.of(object())(None, None) is False  # a world opened anew for every run
    assert WAKE.of(object())(None, None) is None
    REPORT.check(Payouts(), "toy")


def test_a_world_or_scheduler_without_a_required_member_is_one_line():
    """WORLD and SCHEDULER name what is missing, as the report's check does."""
    class World:
        env = {}

        def due(self, t): ...
    with pytest.raises(UserError, match=r"^track 'toy': its world has no check, close$"):
        WORLD.check(World(), "track 'toy'")
    with pytest.raises(UserError, match=r"its scheduler has no times, due, finished$"):
        SCHEDULER.check(object(), "scheduler kind 'x'")


def test_a_hook_is_the_objects_own_member_when_it_has_one():
    """Hook.of gives the object's own member, not the default, and Spec.check passes an
    object with every required member."""
    hook = Hook("word", None, lambda obj: "default")
    assert hook.of(SimpleNamespace(word="own")) == "own"
    assert hook.of(SimpleNamespace()) == "default"
    Spec("toy", ("word",), (hook,)).check(SimpleNamespace(word="own"), "toy")
