"""The user's settings: `$XDG_CONFIG_HOME/rtrain/config.toml` (optional).

ssh_config = "~/.ssh/config.rtrain"      # passed as `ssh -F` (RTRAIN_SSH_CONFIG wins)
poll_interval = 5                         # seconds between state refreshes of active runs

[hosts.gpubox]
transport = "console"                     # pin: exec | console (default: detected)
command = ["{python}", "train.py", "--config", "{config}"]   # default trainer command
python = "python3.11"
workdir = "~/runs"
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rtrain.protocol import locations

from .config_lines import line_of


@dataclass(frozen=True)
class HostSettings:
    transport: str | None = None
    command: list[str] | None = None
    python: str | None = None
    workdir: str | None = None


@dataclass(frozen=True)
class UserConfig:
    ssh_config: str | None = None
    poll_interval: float = 5.0
    hosts: dict[str, HostSettings] = field(default_factory=dict)

    def host(self, alias: str) -> HostSettings:
        return self.hosts.get(alias, HostSettings())


class ConfigError(Exception):
    pass


def load_user_config(path: Path | None = None) -> UserConfig:
    path = path or locations.config_dir() / "config.toml"
    if not path.exists():
        return UserConfig()
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path} cannot be read: {error}") from None
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        # tomllib says where: "Invalid value (at line 3, column 8)".
        raise ConfigError(f"{path} is not valid TOML: {error}") from None

    def where(*keys: str) -> str:
        line = line_of(text, keys)
        return f"{path}, line {line}" if line else str(path)

    hosts = {}
    for alias, entry in data.get("hosts", {}).items():
        if not isinstance(entry, dict):
            raise ConfigError(f"{where('hosts', alias)}: hosts.{alias} must be a table")
        transport = entry.get("transport")
        if transport not in (None, "exec", "console"):
            raise ConfigError(
                f"{where('hosts', alias, 'transport')}: hosts.{alias}.transport must be "
                f"exec or console, not {transport!r}"
            )
        hosts[alias] = HostSettings(
            transport=transport,
            command=entry.get("command"),
            python=entry.get("python"),
            workdir=entry.get("workdir"),
        )
    try:
        poll_interval = float(data.get("poll_interval", 5.0))
    except (TypeError, ValueError):
        raise ConfigError(
            f"{where('poll_interval')}: poll_interval must be a number of seconds"
        ) from None
    return UserConfig(ssh_config=data.get("ssh_config"), poll_interval=poll_interval, hosts=hosts)
