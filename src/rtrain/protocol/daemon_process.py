"""What a daemon process and the client that starts it agree on outside the socket.

Pure functions of an environment mapping, like `locations`: the environment a daemon is
started with, the settings it reads from it (so a client can tell when a running daemon
reads other ones), and the words of a daemon that lost the start-up race.
"""

from __future__ import annotations

from collections.abc import Mapping

# What the daemon needs from the environment of the command that starts it, and nothing
# else: a secret exported for one `rtrain start --secret` must not live on in the daemon and
# reach every later run on `local`. SSH_AUTH_SOCK reaches ssh-agent; PYTHONPATH lets an
# rtrain run from a source tree import itself. NETRC, WANDB_BASE_URL and WANDB_CONFIG_DIR say
# where this machine's W&B login is (`--sync wandb`): files and a URL, never the key itself.
_KEPT = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LANGUAGE",
    "SSH_AUTH_SOCK", "PYTHONPATH", "NETRC", "WANDB_BASE_URL", "WANDB_CONFIG_DIR",
)  # fmt: skip
_KEPT_PREFIXES = ("XDG_", "RTRAIN_", "LC_")

# The variables a daemon reads once, when it starts, that change what it does. A client
# whose own values differ is talking to a daemon that behaves unlike what its shell says.
SETTINGS = ("RTRAIN_SSH_CONFIG", "RTRAIN_POLL_INTERVAL", "RTRAIN_LOG_LEVEL", "XDG_CONFIG_HOME")

# Printed by a daemon that lost the start-up race: another one serves, so keep waiting.
LOST_RACE = "another daemon is already running"


def daemon_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The environment a daemon is started with, taken from `env` (the caller's)."""
    kept = {
        name: value
        for name, value in env.items()
        if name in _KEPT or name.startswith(_KEPT_PREFIXES)
    }
    # A daemon started from inside a run (on `local`) must not hand that run's marker on.
    kept.pop("RTRAIN_RUN_ID", None)
    kept["PYTHONUNBUFFERED"] = "1"
    return kept


def settings(env: Mapping[str, str]) -> dict[str, str]:
    """The daemon settings `env` holds (unset ones left out)."""
    return {name: env[name] for name in SETTINGS if env.get(name)}


def settings_drift(daemon: Mapping[str, str], mine: Mapping[str, str]) -> list[str]:
    """`NAME=value` phrases, one per setting the daemon reads differently from `mine`."""
    drift = []
    for name in SETTINGS:
        theirs, ours = daemon.get(name), mine.get(name)
        if theirs != ours:
            drift.append(f"{name}={theirs}" if theirs else f"{name} unset")
    return drift
