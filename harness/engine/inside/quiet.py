"""Imported first in the forkserver, so every lab process forked from it is born quiet: Ctrl-C
and SIGTERM ignored (the harness owns shutdown and stops its children, with a message or
SIGKILL: a SIGTERM to the whole process group, from `timeout` or a CI cancel, reaches the
harness, which stops the run as for Ctrl-C, not its replicas one by one under it) and no
traceback printed by a child whose harness went away (a pipe closed under it is how it learns
to exit). The harness is the one process that reports; a child's own error reaches it over the
pipe (harness.engine.inside.agent). And each dies with the forkserver from the moment it is
forked, before any lab code of its own runs: a child left waiting for the process object a
harness interrupted never sent would otherwise outlive it, holding the resource tracker's pipe,
and the harness would wait at exit for a tracker that never ends.
"""

from __future__ import annotations

import os
import signal
import sys

from harness.infra import procs

# The forkserver saves the handlers it was started with after its preloads and restores them
# in each child: ignoring SIGINT here is what every child starts with.
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
# The harness starts the forkserver with both blocked, so no Ctrl-C cuts its start-up
# (harness.engine.run.replica); ignored now, they need no blocking, and its children start
# unblocked: one sent while blocked is dropped here.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
sys.excepthook = lambda *exc: None  # a child's unexpected exit is seen, and said, by its harness

_FORKSERVER = os.getpid()
_forks_here = True  # False in a child: its own forks are not the forkserver's


def _die_with_the_forkserver() -> None:
    """In each child the forkserver forks (a zygote's children ask for their zygote); one
    whose forkserver died before it asked exits at once."""
    global _forks_here
    if _forks_here:
        _forks_here = False
        procs.die_with_parent()
        if os.getppid() != _FORKSERVER:
            os._exit(1)


os.register_at_fork(after_in_child=_die_with_the_forkserver)
