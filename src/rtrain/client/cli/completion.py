"""Shell completion: hosts from the ssh config and the registry, run ids from the daemon.

Completion re-runs the program on every TAB, so it never starts a daemon and gives up fast.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import typer

from rtrain.protocol import requests
from rtrain.protocol.requests import Call

_HOST_LINE = re.compile(r"^\s*Host\s+(.+)$", re.IGNORECASE)


def ssh_config_hosts(path: Path) -> list[str]:
    """Concrete aliases of `Host` lines (patterns with * ? ! are skipped)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    names = []
    for line in text.splitlines():
        match = _HOST_LINE.match(line)
        if match:
            names += [n for n in match.group(1).split() if not any(c in n for c in "*?!")]
    return names


def _daemon_request(call: Call[Any]) -> Any:
    from rtrain.client.daemon_client import DaemonClient

    try:
        with DaemonClient.connect(
            spawn=False, timeout=0.5, name="rtrain-completion", tell=False
        ) as client:
            return client.call(call)
    except Exception:  # completion must never print a traceback into the shell
        return None


def complete_host(incomplete: str) -> list[str]:
    config = os.environ.get("RTRAIN_SSH_CONFIG") or str(Path.home() / ".ssh" / "config")
    names = {"local", *ssh_config_hosts(Path(config))}
    listed = _daemon_request(requests.hosts_list())
    if listed is not None:
        names.update(h.alias for h in listed.hosts)
    return sorted(n for n in names if n.startswith(incomplete))


def complete_run_id(ctx: typer.Context, incomplete: str) -> list[str]:
    host = ctx.params.get("host")
    listed = _daemon_request(requests.runs_list(host=host or None))
    if listed is None:
        return []
    return [r.run_id for r in listed.runs if r.run_id.startswith(incomplete)]
