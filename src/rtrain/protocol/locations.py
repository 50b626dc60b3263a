"""Where the daemon's socket, state and config live, computed from the environment alone.

Pure functions of an environment mapping, shared by the daemon and every client, so both
sides agree on the socket without talking. Tests isolate a daemon by changing the variables.
The rules are data (`RULES`): the published schema carries them and the editor extension's
code is generated from it, so every client finds the same daemon.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

# Per place, the first rule whose variable is set and not empty wins; a rule with no
# variable always applies. `{NAME}` is that variable's value, `{uid}` the numeric user id,
# `{home}` the home directory ($HOME, else the user's own).
RULES: dict[str, tuple[tuple[str | None, str], ...]] = {
    "runtimeDir": (
        ("XDG_RUNTIME_DIR", "{XDG_RUNTIME_DIR}/rtrain"),
        (None, "/tmp/rtrain-{uid}"),
    ),
    "socketPath": (
        ("RTRAIN_SOCKET", "{RTRAIN_SOCKET}"),
        ("XDG_RUNTIME_DIR", "{XDG_RUNTIME_DIR}/rtrain/rtrain.sock"),
        (None, "/tmp/rtrain-{uid}/rtrain.sock"),
    ),
    "stateDir": (
        ("XDG_STATE_HOME", "{XDG_STATE_HOME}/rtrain"),
        (None, "{home}/.local/state/rtrain"),
    ),
    "configDir": (
        ("XDG_CONFIG_HOME", "{XDG_CONFIG_HOME}/rtrain"),
        (None, "{home}/.config/rtrain"),
    ),
    "logPath": (
        ("XDG_STATE_HOME", "{XDG_STATE_HOME}/rtrain/daemon.log"),
        (None, "{home}/.local/state/rtrain/daemon.log"),
    ),
}


def _place(name: str, env: Mapping[str, str] | None) -> Path:
    env = os.environ if env is None else env
    for variable, template in RULES[name]:
        if variable is None or env.get(variable):
            if "{home}" in template:
                home = env.get("HOME") or str(Path("~").expanduser())
                template = template.replace("{home}", home)
            template = template.replace("{uid}", str(os.getuid()))
            if variable is not None:
                template = template.replace("{" + variable + "}", env[variable])
            return Path(template)
    raise AssertionError(f"no rule applies for {name}")  # the last rule has no variable


def runtime_dir(env: Mapping[str, str] | None = None) -> Path:
    """The 0700 directory holding the socket, lock file and ssh control sockets."""
    return _place("runtimeDir", env)


def socket_path(env: Mapping[str, str] | None = None) -> Path:
    return _place("socketPath", env)


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """The registry (SQLite) and the daemon log."""
    return _place("stateDir", env)


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    return _place("configDir", env)


def log_path(env: Mapping[str, str] | None = None) -> Path:
    return _place("logPath", env)
