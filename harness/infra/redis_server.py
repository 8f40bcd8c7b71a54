"""Throwaway redis-server processes for the alerts track's Redis faults.

Each server lives in its own temp dir, listens on a free 127.0.0.1 port, keeps nothing on disk
(`--save "" --appendonly no`) and dies with the process that started it (harness.infra.procs).
The program is redis-server or the embedded valkey-server (harness.infra.kinds picks it).
Faults that stop, slow or fail over Redis run against these servers, never a shared one.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from harness.infra import cleanup, kinds, procs
from harness.infra.procs import HOST, free_port


def wait_until(condition, timeout: float, what: str, interval: float = 0.02) -> None:
    """Poll a real condition until it holds; TimeoutError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


@dataclass
class RedisServer:
    """One running redis-server; `stop()` kills it and removes its temp dir."""

    port: int
    workdir: Path
    process: subprocess.Popen[bytes]
    host: str = HOST
    keeper: procs.Keeper | None = field(default=None, repr=False)
    _clients: list[redis.Redis] = field(default_factory=list, repr=False)

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def client(self, **kwargs) -> redis.Redis:
        """A synchronous client for the harness itself (faults, checks), closed on `stop()`."""
        kwargs.setdefault("socket_timeout", 5)
        kwargs.setdefault("socket_connect_timeout", 5)
        client = redis.Redis(host=self.host, port=self.port, **kwargs)
        self._clients.append(client)
        return client

    def ping(self) -> bool:
        try:
            with redis.Redis(
                host=self.host, port=self.port, socket_timeout=1, socket_connect_timeout=1
            ) as probe:
                return bool(probe.ping())
        except (redis.RedisError, OSError):
            return False

    def info(self, section: str) -> dict:
        with redis.Redis(host=self.host, port=self.port, socket_timeout=5) as probe:
            return probe.info(section)

    def stop(self, timeout: float = 5.0) -> None:
        """Kill the server (SIGKILL: nothing to flush) and remove its directory. Idempotent."""
        for client in self._clients:
            client.close()
        self._clients.clear()
        procs.end(self.process, self.keeper, signal.SIGKILL, timeout)
        self.keeper = None
        cleanup.remove_dir(self.workdir)

    def __enter__(self) -> RedisServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_redis_server(
    *,
    replicaof: tuple[str, int] | None = None,
    extra_args: tuple[str, ...] = (),
    binary: str | None = None,
    timeout: float = 10.0,
    attempts: int = 3,
) -> RedisServer:
    """Start a redis-server on a free port in a temp dir and wait until it answers PING.

    `replicaof=(host, port)` starts it as a replica of that address; `extra_args` are passed
    to redis-server as they are (e.g. `("--repl-diskless-sync-delay", "0")`). `binary` defaults
    to the program harness.infra.kinds picks (redis-server on PATH, else the embedded
    valkey-server).
    """
    binary = binary or kinds.throwaway_redis_binary()
    if shutil.which(binary) is None:
        raise FileNotFoundError(f"{binary} not found on PATH")
    last_error: Exception | None = None
    for _ in range(attempts):
        workdir = cleanup.lab_tempdir("redis")
        port = free_port()
        args = [
            binary,
            "--bind", HOST,
            "--port", str(port),
            "--dir", str(workdir),
            "--save", "",
            "--appendonly", "no",
            "--protected-mode", "no",
            "--daemonize", "no",
            "--logfile", str(workdir / "redis.log"),
        ]  # fmt: skip
        if replicaof is not None:
            args += ["--replicaof", replicaof[0], str(replicaof[1])]
        args += list(extra_args)
        process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C is the harness's to handle, not the server's
            preexec_fn=procs.preexec(),
        )
        server = RedisServer(port=port, workdir=workdir, process=process)
        try:
            cleanup.record_server(workdir, process.pid, Path(binary).name)
            server.keeper = procs.keep(process.pid)
            wait_until(
                lambda s=server: not s.running or s.ping(), timeout, f"redis-server on :{port}"
            )
        except BaseException:  # a start that timed out, or Ctrl-C while it starts
            server.stop()
            raise
        if server.running:
            return server
        log = (workdir / "redis.log").read_text(errors="replace")[-2000:]
        last_error = RuntimeError(f"redis-server on :{port} exited at start:\n{log}")
        server.stop()
    raise RuntimeError(f"could not start redis-server after {attempts} attempts") from last_error
