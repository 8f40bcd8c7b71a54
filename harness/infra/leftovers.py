"""`racelab clean`: remove what a run that could not clean up left behind, and nothing else.

Only what the lab recorded as its own: the databases in its list (harness.infra.owned) and the
temp dirs holding its owner file (harness.infra.cleanup). Left behind means the owning harness
is no longer alive (and, for a database, nobody is connected to it); `--all` removes those of
live runs too; a database kept with `run --keep` stays until `--kept`. A database or folder
the lab did not record is never touched, whatever its name.
"""

from __future__ import annotations

import psycopg

from harness.infra import owned, services
from harness.infra.cleanup import remove_stale_dirs


def stale_databases(admin_url: str, everything: bool = False, kept: bool = False) -> list[str]:
    """The lab's databases whose run is gone: its harness is dead and nobody is connected;
    with `everything` those of live runs too; kept ones only with `kept`."""
    with psycopg.connect(services.libpq_url(admin_url), autocommit=True) as conn:
        in_use = {row[0] for row in conn.execute(
            "SELECT DISTINCT datname FROM pg_stat_activity WHERE datname IS NOT NULL")}
    return [m.name for m in owned.made(admin_url)
            if (kept if m.kept else everything or (m.owner_gone() and m.name not in in_use))]


def clean(admin_url: str | None, everything: bool = False, kept: bool = False
          ) -> tuple[list[str], list[str]]:
    """Remove what dead runs left behind: (one line per thing removed, kept databases left)."""
    removed, left = [], []
    if admin_url is not None:
        there = set(services.list_databases(admin_url))
        for name in stale_databases(admin_url, everything, kept):
            if name not in there:  # its harness died before CREATE DATABASE: a row, no more
                owned.forget(admin_url, name)
                continue
            owned.drop(admin_url, name)
            removed.append(f"database {name}")
        left = [m.name for m in owned.made(admin_url) if m.kept]
        if everything and owned.drop_registry_if_empty(admin_url):
            removed.append(f"database {owned.REGISTRY} (the lab's list of its databases, empty)")
    return removed + remove_stale_dirs(everything), left
