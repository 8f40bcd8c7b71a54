"""How an error of the stage's own code is told, in its terms, from inside a lab process: the
FILE:LINE of the stage's file it came from, the SQLSTATE under a driver's wrapper, whether the
connection died under it, and an os._exit the stage calls, announced before it ends the
process. Words and data for the harness; the process itself decides nothing on them."""

from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
from multiprocessing.connection import Connection
from pathlib import Path

from sqlalchemy.exc import DBAPIError

from harness.engine.inside.messages import Broken


def stage_error(e: BaseException, stage_path: str) -> str | None:
    """'FILE:LINE: message' when the error is in a file of the stage, else None."""
    root = Path(stage_path).resolve()
    if isinstance(e, SyntaxError) and e.filename and _under(e.filename, root):
        return f"{shown(e.filename)}:{e.lineno}: {type(e).__name__}: {e.msg}"
    if isinstance(e, (DBAPIError, OSError, EOFError, KeyboardInterrupt)):
        return None
    frames = [f for f in _frames(e.__traceback__) if _under(f.tb_frame.f_code.co_filename, root)]
    if not frames:
        return None
    where = frames[-1]
    said = (f"sys.exit({e.code!r}) ends the replica's process; a tick returns or raises"
            if isinstance(e, SystemExit) else first_line(e))
    return (f"{shown(where.tb_frame.f_code.co_filename)}:{where.tb_lineno}: "
            f"{type(e).__name__}: {said}")


def _frames(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _under(filename: str, root: Path) -> bool:
    return Path(filename).resolve().is_relative_to(root)


def shown(filename: str) -> str:
    """The file as the user would name it: relative to the current folder when under it."""
    path = Path(filename).resolve()
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def connection_lost(e: Exception) -> bool:
    """The connection died under the tick: whether its transaction committed is unknown."""
    return isinstance(e, DBAPIError) and e.connection_invalidated


_NOT_THE_APP = (Path(__file__).resolve().parents[2],  # the harness
                *{Path(p).resolve() for k, p in sysconfig.get_paths().items()
                  if k in ("stdlib", "platstdlib", "purelib", "platlib")})


def app_line(e: BaseException) -> str:
    """'FILE:LINE' of the deepest frame of the app's own code the error passed through (not
    the harness's, a library's or Python's), '' when none did."""
    for tb in reversed(list(_frames(e.__traceback__))):
        name = tb.tb_frame.f_code.co_filename
        if name.startswith("<") or any(Path(name).resolve().is_relative_to(p)
                                       for p in _NOT_THE_APP):
            continue
        return f"{shown(name)}:{tb.tb_lineno}"
    return ""


@contextlib.contextmanager
def exit_told(conn: Connection):
    """While the stage's code runs: an os._exit it calls still ends the process, but the
    harness is told first where and what, in one line (the user's to fix, not the lab's)."""
    real = os._exit

    def told(code: int) -> None:
        caller = sys._getframe(1)
        where = f"{shown(caller.f_code.co_filename)}:{caller.f_lineno}"
        with contextlib.suppress(OSError, ValueError):
            conn.send(Broken(f"{where}: os._exit({code}) ends the replica's process; a tick "
                             "returns or raises"))
        real(code)

    os._exit = told
    try:
        yield
    finally:
        os._exit = real


def server_error(e: BaseException) -> BaseException | None:
    """The driver's error with a SQLSTATE under `e` (SQLAlchemy wraps psycopg's), if any."""
    seen: BaseException | None = e
    for _ in range(4):
        if seen is None or getattr(seen, "sqlstate", None):
            return seen
        seen = getattr(seen, "orig", None) or seen.__cause__ or seen.__context__
    return None


def first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [""])[0]
