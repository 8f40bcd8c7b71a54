"""`racelab clean`: remove what a run that could not clean up left behind, and nothing else.

A run's database is named racelab_<pid>_<hex>, the pid being the harness process's. A throwaway
server lives in a temp dir racelab-<kind>-* holding an owner file: the harness pid, the server's
pid and program, and how to stop it. Left behind means the owning harness is no longer alive
(and, for a database, nobody is connected to it); `--all` removes every one regardless.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import psutil

OWNER_FILE = "racelab-owner.json"
TEMP_PREFIX = "racelab-"
_RUN_DB = re.compile(r"^racelab_(\d+)_[0-9a-f]+$")


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


def stale_databases(admin_url: str, everything: bool = False) -> list[str]:
    """The lab's databases whose run is gone: its harness pid is dead and nobody is connected."""
    import psycopg

    from harness import services

    with psycopg.connect(services.libpq_url(admin_url), autocommit=True) as conn:
        in_use = {row[0] for row in conn.execute(
            "SELECT DISTINCT datname FROM pg_stat_activity WHERE datname IS NOT NULL")}
    found = []
    for name in services.list_databases(admin_url):
        m = _RUN_DB.match(name)
        if everything or (m and not pid_alive(int(m.group(1))) and name not in in_use):
            found.append(name)
    return found


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


def clean(admin_url: str | None, everything: bool = False) -> list[str]:
    """Remove what dead runs left behind; one line per thing removed."""
    from harness import services

    removed = []
    if admin_url is not None:
        for name in stale_databases(admin_url, everything):
            services.drop_database(admin_url, name)
            removed.append(f"database {name}")
    for path in stale_dirs(everything):
        owner = _read_owner(path) or {}
        stopped = _stop_server(owner)
        if stopped:
            removed.append(f"server {stopped}")
        shutil.rmtree(path, ignore_errors=True)
        removed.append(f"temp dir {path}")
    return removed
