"""Where the daemon's socket, state and config live, computed from the environment alone.

Pure functions of an environment mapping, shared by the daemon and every client, so both
sides agree on the socket without talking. Tests isolate a daemon by changing the variables.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def runtime_dir(env: Mapping[str, str] | None = None) -> Path:
    """The 0700 directory holding the socket, lock file and ssh control sockets."""
    env = os.environ if env is None else env
    base = env.get("XDG_RUNTIME_DIR")
    if base:
        return Path(base) / "rtrain"
    return Path(f"/tmp/rtrain-{os.getuid()}")


def socket_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    override = env.get("RTRAIN_SOCKET")
    return Path(override) if override else runtime_dir(env) / "rtrain.sock"


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """The registry (SQLite) and the daemon log."""
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or str(
        Path(env.get("HOME", "~")).expanduser() / ".local" / "state"
    )
    return Path(base) / "rtrain"


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".config")
    return Path(base) / "rtrain"


def log_path(env: Mapping[str, str] | None = None) -> Path:
    return state_dir(env) / "daemon.log"
