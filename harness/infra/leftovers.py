"""`racelab clean`: remove what a run that could not clean up left behind, and nothing else.

A run's database is named racelab_<pid>_<hex>, the pid being the harness process's; a throwaway
server's temp dir records its owner (harness.infra.cleanup). Left behind means the owning harness
is no longer alive (and, for a database, nobody is connected to it); `--all` removes every one.
"""

from __future__ import annotations

import re

import psycopg

from harness.infra import services
from harness.infra.cleanup import pid_alive, remove_stale_dirs

_RUN_DB = re.compile(r"^racelab_(\d+)_[0-9a-f]+$")


def stale_databases(admin_url: str, everything: bool = False) -> list[str]:
    """The lab's databases whose run is gone: its harness pid is dead and nobody is connected."""
    with psycopg.connect(services.libpq_url(admin_url), autocommit=True) as conn:
        in_use = {row[0] for row in conn.execute(
            "SELECT DISTINCT datname FROM pg_stat_activity WHERE datname IS NOT NULL")}
    found = []
    for name in services.list_databases(admin_url):
        m = _RUN_DB.match(name)
        if everything or (m and not pid_alive(int(m.group(1))) and name not in in_use):
            found.append(name)
    return found


def clean(admin_url: str | None, everything: bool = False) -> list[str]:
    """Remove what dead runs left behind; one line per thing removed."""
    removed = []
    if admin_url is not None:
        for name in stale_databases(admin_url, everything):
            services.drop_database(admin_url, name)
            removed.append(f"database {name}")
    return removed + remove_stale_dirs(everything)
