"""The daemon's log, capped so that a daemon that runs for months never fills the disk.

The file grows to at most MAX_BYTES; the record that would pass it first moves the file to
`daemon.log.1` (replacing the one before) and starts a fresh `daemon.log`, so at most about
twice MAX_BYTES stay on disk. The daemon's own stdout and stderr (a client starts it with
both appended to the log: client/spawn.py) follow to the fresh file, so a traceback printed
later never lands in the old one.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from logging.handlers import RotatingFileHandler

MAX_BYTES = 10 * 1024 * 1024
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class CappedLogHandler(RotatingFileHandler):
    """Appends to `path` and rolls it over to `path.1` at `max_bytes`; the descriptors in
    `followers` that write to the same file are moved to the fresh one."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        max_bytes: int = MAX_BYTES,
        followers: Sequence[int] = (1, 2),
    ) -> None:
        super().__init__(path, maxBytes=max_bytes, backupCount=1, encoding="utf-8")
        self.followers = tuple(followers)

    def doRollover(self) -> None:
        following = [fd for fd in self.followers if _writes_to(fd, self.baseFilename)]
        super().doRollover()
        if self.stream is not None:
            for fd in following:
                os.dup2(self.stream.fileno(), fd)


def _writes_to(fd: int, path: str) -> bool:
    try:
        held, named = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)


def setup_daemon_log(path: os.PathLike[str], foreground: bool) -> None:
    """Logging for the daemon: the capped log file, and the terminal too in the foreground."""
    handlers: list[logging.Handler] = [CappedLogHandler(path)]
    if foreground:
        handlers.append(logging.StreamHandler(sys.stderr))
    logging.basicConfig(
        level=os.environ.get("RTRAIN_LOG_LEVEL", "INFO").upper(), format=FORMAT, handlers=handlers
    )
