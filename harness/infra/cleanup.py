"""Ownership of the temp dirs the lab makes, so `racelab clean` (harness.infra.leftovers) can
tell what a dead run left behind from what a live one still uses, and both from anyone else's.

Every temp dir of the lab holds an owner file: the harness pid and that process's start time
(a reused pid is not the owner), and for a throwaway server its pid, program and how to stop
it. The lab's dirs are racelab-<kind>-* (throwaway servers, find-race's hypothesis home) and
the pymp-* dir of multiprocessing's forkserver socket, marked when the forkserver is made. Left
behind means the owning harness is no longer alive; `--all` removes every one regardless. A
dir without the owner file is never touched, whatever its name. (Databases: harness.infra.owned.)

A throwaway PostgreSQL's data dir goes in the memory-backed /dev/shm where Linux has one with
room and the user set no temp dir (TMPDIR, TEMP, TMP): a disk's filesystem makes the cluster's
thousand files slowly when many were deleted shortly before (ext4 skips recently freed inodes),
as a matrix's standby cells do one after another. `clean` looks in both places (`--all` under a
temp dir the user set, in that dir alone).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import psutil

OWNER_FILE = "racelab-owner.json"
TEMP_PREFIX = "racelab-"
MULTIPROCESSING_PREFIX = "pymp-"  # multiprocessing.util.get_temp_dir's own prefix
MEMORY_DIR = Path("/dev/shm")  # Linux's tmpfs (a container's may be 64 MB: then not used)
MEMORY_ROOM = 1 << 30


def pid_alive(pid: int) -> bool:
    """True while pid is a running (not zombie) process on this machine (any OS: psutil)."""
    return started(pid) is not None


def started(pid: int) -> float | None:
    """When process pid started (seconds since the epoch), or None when it does not run."""
    try:
        process = psutil.Process(pid)
        return None if process.status() == psutil.STATUS_ZOMBIE else process.create_time()
    except psutil.Error:
        return None


def owner_alive(pid: int, since: object) -> bool:
    """True while the process that recorded (pid, its start time) runs; a pid reused by a
    later process is not it. No start time (an older owner file): the pid alone."""
    now = started(pid)
    if not isinstance(since, (int, float)):
        return now is not None
    return now is not None and abs(now - since) < 1.0


def me() -> dict:
    """This process as an owner: its pid and start time."""
    return {"owner": os.getpid(), "started": started(os.getpid())}


def lab_tempdir(kind: str, in_memory: bool = False) -> Path:
    """A fresh temp dir racelab-<kind>-*, marked as this process's; `in_memory`: in the
    machine's memory-backed dir when it has one with room (a throwaway server's data, whose
    thousand files a disk's filesystem is slow to make again and again)."""
    where = _memory_dir() if in_memory else None
    return mark(Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{kind}-",
                                      dir=str(where) if where else None)))


def _memory_dir() -> Path | None:
    """MEMORY_DIR when it is another filesystem than the temp dir, with room, and the user set
    no temp dir of their own (then that is where the lab's temp dirs go, every one)."""
    if _user_temp():
        return None
    try:
        fs = os.statvfs(MEMORY_DIR)
        other = os.stat(MEMORY_DIR).st_dev != os.stat(tempfile.gettempdir()).st_dev
    except OSError:
        return None
    room = fs.f_bavail * fs.f_frsize >= MEMORY_ROOM and os.access(MEMORY_DIR, os.W_OK)
    return MEMORY_DIR if other and room else None


def roots(everything: bool = False) -> list[Path]:
    """Where the lab's temp dirs are: the temp dir, and the memory-backed one. Removing every
    dir (`clean --all`) under a temp dir the user set keeps to that dir."""
    temp = Path(tempfile.gettempdir())
    memory = MEMORY_DIR.is_dir() and MEMORY_DIR.resolve() != temp.resolve()
    return [temp, *([MEMORY_DIR] if memory and not (everything and _user_temp()) else [])]


def _user_temp() -> bool:
    return any(os.environ.get(name) for name in ("TMPDIR", "TEMP", "TMP"))


def mark(path: Path) -> Path:
    """Mark a temp dir this process made (or multiprocessing made for it) as the lab's."""
    _write_owner(path, me())
    return path


def record_server(path: Path, pid: int, program: str, stop: list[str] | None = None,
                  signal: str = "SIGKILL") -> None:
    """Note the server started in a lab temp dir, so `clean` can end it if we cannot
    (with the command `stop`, else with `signal`)."""
    _write_owner(path, {**me(), "pid": pid, "program": program, "stop": stop,
                        "signal": signal})


def _write_owner(path: Path, data: dict) -> None:
    """Whole or not at all (written aside, then renamed over): an interrupt mid-write leaves
    the previous owner file, never an empty one that `clean` could not read."""
    aside = path / f".{OWNER_FILE}.new"
    aside.write_text(json.dumps(data))
    os.replace(aside, path / OWNER_FILE)


def remove_dir(path: Path) -> None:
    """Remove a lab temp dir with its owner file last: a removal cut short (an interrupt, a file
    that cannot go) leaves a dir `clean` still knows as the lab's, never an unmarked one."""
    for child in [c for c in path.iterdir() if c.name != OWNER_FILE] if path.is_dir() else []:
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
    if path.is_dir() and [c.name for c in path.iterdir()] in ([], [OWNER_FILE]):
        shutil.rmtree(path, ignore_errors=True)


def _read_owner(path: Path) -> dict | None:
    try:
        data = json.loads((path / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("owner"), int) else None


def stale_dirs(everything: bool = False) -> list[Path]:
    """The lab's temp dirs (by their owner file) whose owning harness is gone."""
    found = []
    ours = [d for root in roots(everything) for prefix in (TEMP_PREFIX, MULTIPROCESSING_PREFIX)
            for d in root.glob(f"{prefix}*")]
    for path in sorted(ours):
        owner = _read_owner(path) if path.is_dir() and not path.is_symlink() else None
        if owner and (everything or not owner_alive(owner["owner"], owner.get("started"))):
            found.append(path)
    return found


def _stop_server(owner: dict) -> str | None:
    """End the server a dir records if it still runs; what was done, or None."""
    pid, program = owner.get("pid"), owner.get("program")
    if not isinstance(pid, int) or not pid_alive(pid):
        return None
    try:
        process = psutil.Process(pid)
        if process.name() != program:  # the pid was reused by something that is not ours
            return None
        if owner.get("stop"):
            subprocess.run(owner["stop"], capture_output=True, timeout=60)
        else:
            process.send_signal(getattr(signal, owner.get("signal") or "SIGKILL"))
            process.wait(10)
    except psutil.TimeoutExpired:
        process.kill()
    except psutil.Error:
        return None
    return f"{program} pid {pid}"


def remove_stale_dirs(everything: bool = False) -> list[str]:
    """End the servers of dead runs and remove their temp dirs; one line per thing removed."""
    removed = []
    for path in stale_dirs(everything):
        owner = _read_owner(path) or {}
        stopped = _stop_server(owner)
        if stopped:
            removed.append(f"server {stopped}")
        remove_dir(path)
        removed.append(f"temp dir {path}")
    return removed
