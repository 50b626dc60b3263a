"""run/shell: how a client opens an interactive shell in a run's directory.

The daemon only says how (the ssh argv through its own ControlMaster, so no new login and
no password prompt); the client runs it on its own terminal, since a daemon has none.
"""

from __future__ import annotations

import os
import shlex

from rtrain.daemon.ssh.options import base_args
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import RunRef, ShellResult

from .context import DaemonState

# The far user's own shell, as a login shell, in the run directory.
LOGIN_SHELL = 'exec "${SHELL:-/bin/sh}" -l'


async def run_shell(ops: DaemonState, p: RunRef) -> ShellResult:
    run_dir = ops.run_dir(p.host, p.run_id, p.workdir)
    transport = await ops.transport(p.host)
    if transport.kind == "local":
        local_dir = os.path.expanduser(run_dir)
        if not os.path.isdir(local_dir):
            raise app_error(Kind.RUN_NOT_FOUND, f"no run {p.run_id} on local ({local_dir}).")
        return ShellResult(argv=[os.environ.get("SHELL") or "/bin/sh", "-l"], cwd=local_dir)
    await transport.connect()
    master = getattr(transport, "master", None)
    if master is None:
        raise app_error(
            Kind.NOT_IMPLEMENTED, f"rtrain shell cannot reach {p.host} over {transport.kind}."
        )
    cd = f"cd {_far_path(run_dir)}"
    if transport.kind == "exec":
        return ShellResult(argv=master.command_argv(f"{cd} && {LOGIN_SHELL}", tty=True))
    # A console gateway runs its own login shell and takes no command: keystrokes only.
    argv = [
        "ssh",
        *base_args(master.config),
        "-o",
        f"ControlPath={master.path}",
        "-o",
        "ControlMaster=no",
        "-o",
        "ProxyCommand=false",
        "-tt",
        p.host,
    ]
    return ShellResult(argv=argv, type_in=f"{cd}\n")


def _far_path(path: str) -> str:
    """`path` quoted for the far shell, a leading `~/` left for it to expand."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)
