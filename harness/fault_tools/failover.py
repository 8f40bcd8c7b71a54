"""A Redis primary and replica whose replication link can be cut, for the redis-failover fault.

The replica replicates through a `TcpProxy` (the link), and the app reaches Redis through another
`TcpProxy` (the front door). The fault, in order:

1. `cut_link()`     the link proxy closes: the replica loses the primary and cannot reconnect;
2.                  the app writes its claim on the primary, which never reaches the replica;
3. `promote()`      the replica becomes a primary (`REPLICAOF NO ONE`) without that key;
4. `front.repoint(pair.replica.address)` (or `fail_over(front)`): the app now talks to it.

Pausing the replica (SIGSTOP) instead of cutting the link does not lose the key: it already sits
in the replica's socket buffer and is applied on resume (STORY.md, facts from the field).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.fault_tools.proxy import TcpProxy
from harness.infra.redis_server import RedisServer, start_redis_server, wait_until


@dataclass
class FailoverPair:
    primary: RedisServer
    replica: RedisServer
    link: TcpProxy  # replica -> primary replication traffic

    def replica_link_up(self) -> bool:
        info = self.replica.info("replication")
        return info.get("role") == "slave" and info.get("master_link_status") == "up"

    def wait_in_sync(self, timeout: float = 10.0) -> None:
        """Wait until the replica's link is up and its offset has caught up with the primary's."""

        def caught_up() -> bool:
            if not self.replica_link_up():
                return False
            primary = self.primary.info("replication").get("master_repl_offset", -1)
            replica = self.replica.info("replication").get("slave_repl_offset", -2)
            return primary == replica

        wait_until(caught_up, timeout, "the replica to catch up with the primary")

    def cut_link(self, timeout: float = 10.0) -> None:
        """Drop the replication link and keep it down; returns once the replica sees it down."""
        self.link.close()
        wait_until(
            lambda: self.replica.info("replication").get("master_link_status") == "down",
            timeout,
            "the replica to notice its link is down",
        )

    def promote(self, timeout: float = 10.0) -> None:
        """Make the replica a primary of its own (`REPLICAOF NO ONE`)."""
        with self.replica.client() as client:
            client.execute_command("REPLICAOF", "NO", "ONE")
        wait_until(
            lambda: self.replica.info("replication").get("role") == "master",
            timeout,
            "the replica to become a primary",
        )

    def fail_over(self, front: TcpProxy) -> None:
        """Cut, promote and re-point the app's proxy at the new primary."""
        if self.link.listening:
            self.cut_link()
        self.promote()
        front.repoint(self.replica.address)

    def stop(self) -> None:
        self.link.stop()
        self.replica.stop()
        self.primary.stop()

    def __enter__(self) -> FailoverPair:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_failover_pair(timeout: float = 10.0) -> FailoverPair:
    """Start a primary and a replica that replicates through a proxy; return once in sync."""
    # The default 5 s diskless-sync delay would make every pair wait 5 s for its first sync.
    primary = start_redis_server(extra_args=("--repl-diskless-sync-delay", "0"))
    link = replica = None
    try:
        link = TcpProxy((primary.host, primary.port)).start()
        replica = start_redis_server(replicaof=link.address)
        pair = FailoverPair(primary=primary, replica=replica, link=link)
        pair.wait_in_sync(timeout)
        return pair
    except BaseException:
        for part in (link, replica, primary):
            if part is not None:
                part.stop()
        raise
