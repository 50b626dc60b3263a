"""Starting the daemon on demand: detached, in its own session, its output in the daemon log."""

from __future__ import annotations

import os
import sys

from rtrain.protocol import locations


def spawn_daemon() -> None:
    """Start a daemon in the background and return at once.

    A double fork leaves the daemon a child of init, so no caller ever owns (or must reap)
    it. Many callers at once are fine: the daemon's instance lock lets one serve.
    """
    log = locations.log_path()
    log.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "rtrain.daemon"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            try:
                os.setsid()
                if os.fork() == 0:
                    null = os.open(os.devnull, os.O_RDONLY)
                    os.dup2(null, 0)
                    os.dup2(out, 1)
                    os.dup2(out, 2)
                    os.chdir("/")
                    os.execve(argv[0], argv, env)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
    finally:
        os.close(out)


def spawn_allowed(no_spawn_flag: bool = False) -> bool:
    return not no_spawn_flag and os.environ.get("RTRAIN_NO_SPAWN", "") in ("", "0")
