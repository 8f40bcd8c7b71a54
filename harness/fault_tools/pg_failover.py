"""A PostgreSQL primary and standby the run reaches through one front address, for a failover:
the server the standby-failover faults run on (harness.engine.model.control.RunServer).

The pair is harness.fault_tools.standby's; in front of the primary stands a `TcpProxy` (the
address a service's clients are given, such as a DNS name or a virtual IP that a failover tool
moves). The failover, in the order the faults call it:

1. `cut_stream()`  the standby stops receiving WAL (its `primary_conninfo` emptied and
                   reloaded): what the primary commits from now on never reaches it;
2.                 a replica commits on the primary;
3. `fail_over()`   the primary dies (SIGQUIT, PostgreSQL's immediate shutdown), the standby is
                   promoted (`pg_promote`) and the front address moves to it: every connection
                   through it is dropped, new ones reach the new primary.

With `remote_apply`, the primary waits, at each COMMIT, until its standby has applied it
(`synchronous_standby_names = '*'`, `synchronous_commit = remote_apply`): once the stream is
cut, a COMMIT waits until the primary dies, and is never acknowledged.
"""

from __future__ import annotations

import time

import psycopg

from harness.fault_tools.proxy import TcpProxy
from harness.fault_tools.standby import CATCH_UP_TIMEOUT_S, StandbyPair, wait_replayed
from harness.infra import services

SETTLE_TIMEOUT_S = 10.0


class FailoverPair(StandbyPair):
    def __init__(self, needed_by: str, remote_apply: bool = False) -> None:
        super().__init__(needed_by)
        self.front: TcpProxy | None = None
        try:
            if remote_apply:
                self._wait_for_standby_on_commit()
            self.front = TcpProxy(("127.0.0.1", self.primary.port))  # known before it starts,
            self.front.start()  # so a failed start is stopped by close()
        except BaseException:
            self.close()
            raise
        self.url = f"postgresql://postgres@127.0.0.1:{self.front.port}/postgres"
        self.remote_apply = remote_apply
        self.promoted = False

    def _wait_for_standby_on_commit(self) -> None:
        # the embedded server is started with synchronous_commit=off on its command line; a
        # role's setting outranks it, and every session of the run logs in as postgres
        with psycopg.connect(self.primary.url, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
            conn.execute("ALTER ROLE postgres SET synchronous_commit = 'remote_apply'")
            conn.execute("SELECT pg_reload_conf()")
            deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
            while conn.execute("SELECT count(*) FROM pg_stat_replication "
                               "WHERE sync_state = 'sync'").fetchone()[0] == 0:
                if time.monotonic() > deadline:
                    raise RuntimeError("the standby did not become synchronous in "
                                       f"{CATCH_UP_TIMEOUT_S:.0f} s")
                time.sleep(0.01)

    def env(self, database: str) -> dict[str, str]:
        return {}  # the replicas' DATABASE_URL is the front address already

    def direct_url(self, database: str, standby: bool = False) -> str:
        """The database on the primary (or the standby) itself, not through the front."""
        server = self.standby if standby else self.primary
        return services.libpq_url(services.app_url(server.url, database))

    def cut_stream(self) -> tuple[str, str]:
        """Once the standby has applied all the primary has flushed, stop its stream: the
        positions then (the primary's written WAL, the standby's replayed WAL)."""
        with psycopg.connect(self.primary.url, autocommit=True) as conn:
            # the server commits asynchronously (synchronous_commit=off): WAL reaches the
            # standby once flushed, and a checkpoint flushes every record before its own
            conn.execute("CHECKPOINT")
            written = conn.execute("SELECT pg_current_wal_flush_lsn()::text").fetchone()[0]
        with psycopg.connect(self.standby.url, autocommit=True) as conn:
            wait_replayed(conn, written)
            deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
            conn.execute("ALTER SYSTEM SET primary_conninfo = ''")
            conn.execute("SELECT pg_reload_conf()")
            while conn.execute("SELECT count(*) FROM pg_stat_wal_receiver").fetchone()[0]:
                if time.monotonic() > deadline:
                    raise RuntimeError("the standby's WAL receiver did not stop in "
                                       f"{CATCH_UP_TIMEOUT_S:.0f} s")
                time.sleep(0.01)
        return self.positions()

    def open_transactions(self, database: str, process: str) -> dict[int, object]:
        """The transactions the lab process `process` (its application name ends in
        `:process`) has open in `database` on the primary: backend pid → when it began."""
        with psycopg.connect(self.primary.url, autocommit=True) as conn:
            return dict(conn.execute(
                "SELECT pid, xact_start FROM pg_stat_activity WHERE datname = %s AND "
                "application_name LIKE %s AND xact_start IS NOT NULL",
                (database, f"%:{process}")).fetchall())

    def settle(self, database: str, process: str, held: dict[int, object]) -> list[str]:
        """Wait until each of the transactions `held` (open_transactions before the process
        was let go) has ended, or waits at its COMMIT for the standby; the application names
        of those that wait (empty: every COMMIT was acknowledged). A transaction the process
        began after is not waited for: its next one may be held again by the harness."""
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        with psycopg.connect(self.primary.url, autocommit=True) as conn:
            while True:
                rows = conn.execute(
                    "SELECT pid, application_name, xact_start, coalesce(wait_event, '') "
                    "FROM pg_stat_activity WHERE pid = ANY(%s)", (list(held),)).fetchall()
                going = [(name, event) for pid, name, began, event in rows
                         if began is not None and began == held[pid]]
                if all(event == "SyncRep" for _, event in going):
                    return [name for name, _ in going]
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{process}'s transaction on {database} did not end "
                                       f"in {SETTLE_TIMEOUT_S:.0f} s: {going}")
                time.sleep(0.005)

    def fail_over(self) -> str:
        """The primary dies, the standby is promoted, the front moves to it: the new
        primary's WAL position once promoted."""
        self.primary.stop()
        self.primary = None
        with psycopg.connect(self.standby.url, autocommit=True) as conn:
            if not conn.execute("SELECT pg_promote(wait => true)").fetchone()[0]:
                raise RuntimeError("the standby was not promoted within pg_promote's 60 s")
            lsn = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        self.front.repoint(("127.0.0.1", self.standby.port))
        self.promoted = True
        return lsn

    def close(self) -> None:
        try:
            if self.front is not None:
                self.front.stop()
        finally:
            self.front = None
            super().close()
