"""harness.writes, the one way the lab writes a user's file: checked first, replaced whole in
one rename, never through a symlink, never over a file the lab did not write."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness import writes
from harness.errors import UserError


def _refused(path: Path, *words: str, **options) -> str:
    with pytest.raises(UserError) as e:
        writes.Target(path, "--out", **options)
    message = str(e.value)
    assert message.startswith(f"--out {path}: ")
    for word in words:
        assert word in message
    return message


def test_the_lab_replaces_its_own_file_but_not_one_changed_since(tmp_path):
    """A file the lab wrote is replaced without --force; once someone edits it, only
    --force replaces it."""
    path = tmp_path / "race.toml"
    writes.Target(path, "--out").write('name = "a"\n')
    writes.Target(path, "--out").write('name = "b"\n')
    assert path.read_text().splitlines()[0] == 'name = "b"'
    assert writes.written_by_lab(path) is True
    path.write_text(path.read_text().replace('"b"', '"mine"'))
    assert writes.written_by_lab(path) is False
    _refused(path, "racelab did not write this file, or it was changed since", "--force")
    writes.Target(path, "--out", force=True).write('name = "c"\n')
    assert path.read_text().splitlines()[0] == 'name = "c"'


def test_a_users_file_is_refused_and_an_empty_one_taken(tmp_path):
    """A file with the user's text is never overwritten without --force; an empty one holds
    nothing to lose (an earlier racelab left them at 0 bytes)."""
    mine = tmp_path / "index.html"
    mine.write_text("<p>my page</p>\n")
    _refused(mine, "racelab did not write this file")
    assert mine.read_text() == "<p>my page</p>\n"
    empty = tmp_path / "empty.svg"
    empty.write_text("")
    writes.Target(empty, "--out").write("<svg/>")
    assert empty.read_text().startswith("<svg/>\n<!-- written by racelab; sha256:")


def test_a_fifo_a_folder_and_a_symlink_are_refused_at_once(tmp_path):
    """A FIFO (never opened, so nothing waits for a reader), a folder, and a symlink (even one
    to a file the lab wrote) at the path: one line each, at the check."""
    fifo = tmp_path / "pipe.svg"
    os.mkfifo(fifo)
    _refused(fifo, "not a regular file")
    _refused(tmp_path, "it is a folder")
    lab = tmp_path / "lab.svg"
    writes.Target(lab, "--out").write("<svg/>")
    link = tmp_path / "link.svg"
    link.symlink_to(lab)
    _refused(link, "it is a symlink")
    assert lab.read_text().startswith("<svg/>")


def test_a_missing_folder_is_refused_or_made_only_when_the_file_is_written(tmp_path):
    """An --svg or --out in a folder that does not exist is refused; a report folder
    (make_folder) is made only by the write, so a check that passes and a command that then
    fails leave no folder."""
    _refused(tmp_path / "none" / "x.svg", "no folder")
    target = writes.Target(tmp_path / "new" / "deeper" / "index.html", "--html",
                           make_folder=True)
    assert (tmp_path / "new").exists() is False
    target.write("<html></html>")
    assert (tmp_path / "new" / "deeper" / "index.html").is_file()


def test_a_folder_nobody_can_write_in_is_refused_at_the_check():
    """/proc takes no new file: refused when the target is made, before any work."""
    _refused(Path("/proc/racelab-report/index.html"), "cannot write in /proc", make_folder=True)


def test_an_interrupted_write_leaves_the_previous_file_and_no_temp_file(tmp_path, monkeypatch):
    """Ctrl-C arriving at the rename: the previous file is as it was, and the temp file beside
    it is gone."""
    path = tmp_path / "index.html"
    writes.Target(path, "--html").write("<p>yesterday</p>")
    before = path.read_bytes()

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        writes.Target(path, "--html").write("<p>today</p>")
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["index.html"]


def test_a_folder_copy_is_whole_or_absent_and_never_through_a_symlink(tmp_path):
    """An exercise's copy: a failure while it is filled leaves no target and no temp folder;
    a symlink at the target is refused."""
    source = tmp_path / "stage"
    source.mkdir()
    (source / "app.py").write_text("print(1)\n")
    scratch = tmp_path / "scratch"

    def fails(folder: Path) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError):
        writes.copy_folder(source, scratch / "01", fails)
    assert list(scratch.iterdir()) == []
    writes.copy_folder(source, scratch / "01", lambda folder: (folder / "from").write_text("x"))
    assert sorted(p.name for p in (scratch / "01").iterdir()) == ["app.py", "from"]
    (scratch / "02").symlink_to(tmp_path)
    with pytest.raises(UserError, match="symlink"):
        writes.copy_folder(source, scratch / "02", lambda folder: None)
