"""Ownership of what a run leaves on disk, so `racelab clean` (harness.infra.leftovers) can
tell what a dead run left behind from what a live one still uses.

A run's database is named racelab_<pid>_<hex>, the pid being the harness process's. A throwaway
server lives in a temp dir racelab-<kind>-* holding an owner file: the harness pid, the server's
pid and program, and how to stop it. Left behind means the owning harness is no longer alive
(and, for a database, nobody is connected to it); `--all` removes every one regardless.
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


def pid_alive(pid: int) -> bool:
    """True while pid is a running (not zombie) process on this machine (any OS: psutil)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def lab_tempdir(kind: str) -> Path:
    """A fresh temp dir for one throwaway server, marked as this process's."""
    path = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{kind}-"))
    _write_owner(path, {"owner": os.getpid()})
    return path


def record_server(path: Path, pid: int, program: str, stop: list[str] | None = None,
                  signal: str = "SIGKILL") -> None:
    """Note the server started in a lab temp dir, so `clean` can end it if we cannot
    (with the command `stop`, else with `signal`)."""
    _write_owner(path, {"owner": os.getpid(), "pid": pid, "program": program, "stop": stop,
                        "signal": signal})


def _write_owner(path: Path, data: dict) -> None:
    (path / OWNER_FILE).write_text(json.dumps(data))


def _read_owner(path: Path) -> dict | None:
    try:
        data = json.loads((path / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("owner"), int) else None


def stale_dirs(everything: bool = False) -> list[Path]:
    """The lab's throwaway-server temp dirs whose owning harness is gone."""
    found = []
    for path in sorted(Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*")):
        owner = _read_owner(path) if path.is_dir() else None
        if owner and (everything or not pid_alive(owner["owner"])):
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
        shutil.rmtree(path, ignore_errors=True)
        removed.append(f"temp dir {path}")
    return removed
