"""Starting the daemon on demand: detached, in its own session, its output in the daemon log,
with an environment of its own rather than the caller's."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from rtrain.protocol import locations
from rtrain.protocol.daemon_process import daemon_environment


@dataclass(frozen=True)
class SpawnedDaemon:
    """A daemon this process started: its pid, and where its own output begins in the log."""

    pid: int
    log: Path
    log_offset: int

    def exited(self) -> bool:
        return not process_alive(self.pid)

    def output(self) -> str:
        """What the daemon wrote to its log since it was started."""
        try:
            with open(self.log, "rb") as f:
                # A log past its cap starts afresh (daemon/daemon_log.py): then from its start.
                f.seek(self.log_offset if os.fstat(f.fileno()).st_size >= self.log_offset else 0)
                return f.read(64 * 1024).decode(errors="replace")
        except OSError:
            return ""

    def last_error(self) -> str:
        """The daemon's own last words: the last line it printed (a traceback ends with the
        exception), or a plain statement when it said nothing."""
        lines = [line.strip() for line in self.output().splitlines() if line.strip()]
        return lines[-1] if lines else "it printed nothing"


def spawn_daemon() -> SpawnedDaemon:
    """Start a daemon in the background and return at once.

    A double fork leaves the daemon a child of init, so no caller ever owns (or must reap)
    it; the middle process passes the daemon's pid back through a pipe. Many callers at once
    are fine: the daemon's instance lock lets one serve.
    """
    log = locations.log_path()
    log.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "rtrain.daemon"]
    env = daemon_environment(os.environ)
    out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    offset = os.fstat(out).st_size
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            try:
                os.close(read_end)
                os.setsid()
                grandchild = os.fork()
                if grandchild == 0:
                    os.close(write_end)
                    null = os.open(os.devnull, os.O_RDONLY)
                    os.dup2(null, 0)
                    os.dup2(out, 1)
                    os.dup2(out, 2)
                    os.chdir("/")
                    os.execve(argv[0], argv, env)
                os.write(write_end, str(grandchild).encode())
            finally:
                os._exit(0)
        os.close(write_end)
        write_end = -1
        os.waitpid(pid, 0)
        with os.fdopen(read_end, "rb") as pipe:
            read_end = -1
            daemon_pid = int(pipe.read() or b"0")
    finally:
        os.close(out)
        for fd in (read_end, write_end):
            if fd >= 0:
                os.close(fd)
    return SpawnedDaemon(daemon_pid, log, offset)


def process_alive(pid: int) -> bool:
    """Whether `pid` runs. An exited process not yet reaped (a zombie: init reaps it when it
    gets round to it, seconds later in some containers) has stopped; only Linux's /proc
    tells."""
    if pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def spawn_allowed(no_spawn_flag: bool = False) -> bool:
    return not no_spawn_flag and os.environ.get("RTRAIN_NO_SPAWN", "") in ("", "0")
