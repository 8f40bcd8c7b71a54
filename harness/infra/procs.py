"""Two things every process the lab starts needs: to die with its parent, and a free port."""

from __future__ import annotations

import ctypes
import os
import signal
import socket

PR_SET_PDEATHSIG = 1
HOST = "127.0.0.1"


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent goes away (Linux; elsewhere a
    no-op). Called first thing in a child, or as a Popen preexec_fn."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        return
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() == 1:  # the parent died before the request took effect
        os._exit(1)


def free_port(host: str = HOST) -> int:
    """A port nothing listens on right now (the caller retries if it is taken before use)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
