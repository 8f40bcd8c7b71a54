"""Every file the lab writes for the user (the report page, an SVG, find-race's scenario, an
exercise's copy): checked before the work starts, then written whole or not at all.

`Target(path, option)` checks at once, so a target that cannot be written fails in the first
second, before a long search: the folder takes a file (probed with a temp file, made later if
missing), the path is no symlink (never followed, so nothing outside the folder is written),
no folder, no device or FIFO, and an existing file there is one the lab wrote and nobody has
changed since (`force` overwrites anyway). `write(text)` checks again, writes a temp file in the
same folder and renames it over the path: a failed or interrupted command leaves the previous
file as it was, and a SIGKILL at worst a `.NAME.*.racelab-tmp` beside it. Each file ends with a
comment `written by racelab; sha256:…` over the text above it: how the lab knows its own.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from harness.errors import UserError

TMP_SUFFIX = ".racelab-tmp"
_MARK = re.compile(rb"(?:<!--|#) written by racelab; sha256:([0-9a-f]{64})(?: -->)?\n\Z")
_XML = {".html", ".htm", ".svg", ".xml"}
LARGEST_OWN = 64 << 20  # bytes: no page or picture of the lab's is near this; a larger file
# is not read to find out (it is not the lab's)
_UMASK = os.umask(0o022)
os.umask(_UMASK)


class Target:
    """A file the lab will write at `path`, named on the command line by `option`; its folder
    must exist unless `make_folder` (made when the file is written)."""

    def __init__(self, path: str | Path, option: str, force: bool = False,
                 make_folder: bool = False) -> None:
        if str(path) == "":
            raise UserError(f"{option}: an empty path")
        self.path, self.option, self.force = Path(path), option, force
        self.check()
        if not make_folder and not self.path.parent.is_dir():
            self._refuse(f"no folder {self.path.parent}")
        _probe(self.path.parent, self._refuse)

    def check(self) -> None:
        """One line and exit 2 unless the path can take the lab's file."""
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return
        except OSError as e:
            self._refuse(e.strerror)
        if stat.S_ISLNK(st.st_mode):
            self._refuse("it is a symlink; racelab never writes through one (remove it or "
                         "choose another path)")
        if stat.S_ISDIR(st.st_mode):
            self._refuse("it is a folder")
        if not stat.S_ISREG(st.st_mode):
            self._refuse("it is not a regular file")
        if st.st_size and not self.force and not written_by_lab(self.path):
            self._refuse("racelab did not write this file, or it was changed since; "
                         "--force overwrites it")

    def write(self, text: str) -> Path:
        """The text and its mark, in place of the path's file in one rename."""
        self.check()
        body = text.encode()
        body += b"" if body.endswith(b"\n") or not body else b"\n"
        digest = hashlib.sha256(body).hexdigest()
        mark = (f"<!-- written by racelab; sha256:{digest} -->\n" if self.path.suffix in _XML
                else f"# written by racelab; sha256:{digest}\n")
        try:
            replace_file(self.path, body + mark.encode())
        except OSError as e:
            self._refuse(e.strerror or str(e))
        return self.path

    def _refuse(self, why: str) -> None:
        raise UserError(f"{self.option} {self.path}: {why}")


def written_by_lab(path: Path) -> bool:
    """True when the file ends with the lab's mark and the text above it is unchanged."""
    try:
        if path.stat().st_size > LARGEST_OWN:
            return False
        data = path.read_bytes()
    except OSError:
        return False
    start = data.rfind(b"\n", 0, len(data) - 1) + 1
    m = _MARK.match(data, start)
    if m is None:
        return False
    return hashlib.sha256(data[:start]).hexdigest() == m.group(1).decode()


def replace_file(path: Path, data: bytes) -> None:
    """Write data to a temp file beside path, then rename it over path (for the lab's own
    files, e.g. the pictures in docs/; a user's go through Target)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def copy_folder(source: Path, target: Path, fill: Callable[[Path], None]) -> None:
    """Copy a folder to target (which must not exist) whole or not at all: into a temp folder
    beside it, `fill(temp)` adds to it, then one rename."""
    if target.is_symlink():
        raise UserError(f"{target}: it is a symlink; racelab never writes through one")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.",
                                suffix=TMP_SUFFIX))
    try:
        shutil.copytree(source, tmp, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "README.md"))
        fill(tmp)
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _probe(folder: Path, refuse: Callable[[str], None]) -> None:
    """Can a file be made in folder (or, if missing, in the folder that would hold it)? Tried
    with a temp file or folder removed at once: nothing is left, and a missing folder is made
    only when the file is written."""
    here = folder
    while not here.exists() and not here.is_symlink() and here != here.parent:
        here = here.parent
    if not here.is_dir():
        refuse(f"{here} is not a folder")
    try:
        if here == folder:
            fd, tmp = tempfile.mkstemp(dir=here, prefix=".racelab-probe-")
            os.close(fd)
            os.unlink(tmp)
        else:
            os.rmdir(tempfile.mkdtemp(dir=here, prefix=".racelab-probe-"))
    except OSError as e:
        refuse(f"cannot write in {here}: {e.strerror}")
