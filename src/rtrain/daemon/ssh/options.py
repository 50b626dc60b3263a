"""The ssh options rtrain always uses, and where the ssh config comes from.

Host-key checking is never turned off: a changed key stops the operation (see failures.py).
"""

from __future__ import annotations

import os
from pathlib import Path

CONNECT_TIMEOUT = 10
ALIVE_INTERVAL = 5
ALIVE_COUNT = 3

BASE_OPTIONS = [
    "-o",
    "BatchMode=yes",  # never a password or passphrase prompt: fail fast instead
    "-o",
    f"ConnectTimeout={CONNECT_TIMEOUT}",
    "-o",
    f"ServerAliveInterval={ALIVE_INTERVAL}",
    "-o",
    f"ServerAliveCountMax={ALIVE_COUNT}",
    "-o",
    "LogLevel=ERROR",
]


def ssh_config_file(user_setting: str | None = None) -> Path | None:
    """`RTRAIN_SSH_CONFIG`, else the user config's `ssh_config`, else ssh's own default."""
    value = os.environ.get("RTRAIN_SSH_CONFIG") or user_setting
    return Path(value).expanduser() if value else None


def base_args(config: Path | None) -> list[str]:
    return (["-F", str(config)] if config else []) + BASE_OPTIONS
