"""What every process the lab starts needs: to die with the harness, and a free port.

Dying with the parent, on Linux and elsewhere. Linux has a kernel answer: prctl(PR_SET_PDEATHSIG)
asks for a signal when the parent goes. Elsewhere (macOS) a child written in Python watches its
parent from a thread, and a server (PostgreSQL, Redis) gets a keeper: a tiny process reading a
pipe only the harness writes to, which sees end-of-file the moment the harness is gone, however
it died, and then ends the server. Both ways end in the same place: nothing the lab started
outlives it.

    python -m harness.infra.procs PID SIGNAL     the keeper (started by `keep`, not by hand)
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
HOST = "127.0.0.1"
WATCH_INTERVAL_S = 0.2
# Tests set this to False to take the path a macOS machine takes, on Linux.
USE_PRCTL = sys.platform.startswith("linux")


def free_port(host: str = HOST) -> int:
    """A port nothing listens on right now (the caller retries if it is taken before use)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _prctl(sig: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent() -> None:
    """Called first thing in a Python child: exit when the parent goes (prctl on Linux, a
    watching thread elsewhere)."""
    parent = os.getppid()
    if not (USE_PRCTL and _prctl(signal.SIGKILL)):
        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(WATCH_INTERVAL_S)
            os._exit(1)

        threading.Thread(target=watch, name="racelab-parent-watch", daemon=True).start()
    if os.getppid() != parent or parent == 1:  # the parent died before the request took effect
        os._exit(1)


def preexec(sig: int = signal.SIGKILL):
    """A Popen `preexec_fn` that makes a server get `sig` when the thread that forked it dies
    (Linux; elsewhere None, and `keep` covers the server)."""
    if not USE_PRCTL:
        return None

    def arm() -> None:
        if not _prctl(sig):
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")

    return arm


def end(process: subprocess.Popen[bytes], keeper: Keeper | None, sig: int = signal.SIGKILL,
        timeout: float = 10.0) -> None:
    """Stop a server the lab started: `sig`, then SIGKILL if it is still there after `timeout`
    seconds; then let its keeper go. Idempotent."""
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout)
    if keeper is not None:
        keeper.release()


class Keeper:
    """Ends one server process when the harness dies; `release()` when it was stopped
    the ordinary way."""

    def __init__(self, proc: subprocess.Popen[bytes]):
        self.proc = proc

    def release(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.write(b"released\n")
            self.proc.stdin.close()
        self.proc.wait(5)


def keep(pid: int, sig: int = signal.SIGKILL) -> Keeper | None:
    """Start a keeper for server `pid` unless the kernel already covers it (Linux)."""
    if USE_PRCTL:
        return None
    proc = subprocess.Popen([sys.executable, "-m", "harness.infra.procs", str(pid), str(int(sig))],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            start_new_session=True)  # Ctrl-C at the terminal is not for it
    return Keeper(proc)


def _keeper_main(pid: int, sig: int) -> None:
    import psutil

    try:
        server = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    said = sys.stdin.buffer.read()  # blocks until the harness closes the pipe, or dies
    if said.startswith(b"released"):
        return
    try:
        server.send_signal(sig)  # psutil checks the pid was not reused since we looked
        server.wait(10)
    except psutil.TimeoutExpired:
        server.kill()
    except psutil.NoSuchProcess:
        pass


if __name__ == "__main__":
    _keeper_main(int(sys.argv[1]), int(sys.argv[2]))
