"""The pictures in the stage READMEs are the runs they claim to be: redrawn, they match."""

from __future__ import annotations

import pytest

from harness import stage_pictures
from harness.engine.model import stages
from tests.helpers import run

PICTURES = stage_pictures.wanted()


def test_every_stage_readme_shows_a_picture():
    """Each shipped stage's README links one picture of a run (`make pictures` draws it)."""
    shown = sorted(p.stage.folder for p in PICTURES)
    assert shown == sorted(s.folder for s in stages.all_stages() if s.root == stages.ROOT)


@pytest.mark.parametrize("picture", PICTURES, ids=lambda p: p.path.name)
def test_the_committed_picture_is_not_stale(pg, picture):
    """A fresh run of the same stage and scenario, made once in this test process and shared
    with the tests that read the same cell, draws the committed SVG, byte for byte; if not, run
    `make pictures` and commit what it draws."""
    assert picture.path.is_file(), f"{picture.path} is missing: run `make pictures`"
    result = run(picture.stage.id, picture.scenario)
    assert picture.draw(result) == picture.path.read_text(), (
        f"{picture.path.name} is stale: run `make pictures` and commit it")


def test_make_pictures_draws_a_fresh_run_of_the_cell_its_readme_names(pg):
    """`make pictures` (Picture.draw with no run given) runs the cell afresh and draws what is
    committed."""
    picture = next(p for p in PICTURES if p.stage.id == "00")
    assert picture.draw() == picture.path.read_text()
