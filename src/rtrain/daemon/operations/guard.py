"""host/guard: show, arm or disarm the guard on a host (docs/guard.md)."""

from __future__ import annotations

import time

from rtrain.daemon.guard_book import guard_state
from rtrain.daemon.remote.contract import guard_scripts
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import GuardParams, GuardResult

from .context import DaemonState


def check_guard_command(command: str) -> str:
    """A command the guard can run: not empty, and nothing an argv cannot carry."""
    if not command.strip():
        raise app_error(Kind.INVALID_COMMAND, "the guard's command is empty.")
    if "\0" in command:
        raise app_error(Kind.INVALID_COMMAND, "the guard's command holds a NUL character.")
    return command


async def guard(ops: DaemonState, p: GuardParams) -> GuardResult:
    # Everything a person can get wrong is refused before any ssh.
    validation.host(p.host)
    workdir = ops.host_workdir(p.host, p.workdir)
    settings = ops.hosts.config.host(p.host)
    # `arm` without a setting takes the host's from config.toml.
    idle_seconds = p.idle_seconds if p.idle_seconds is not None else settings.idle_stop_seconds
    command = p.command if p.command is not None else settings.terminate
    if p.action == "arm":
        if idle_seconds is None:
            raise app_error(
                Kind.INVALID_COMMAND,
                f"arming the guard needs an idle period: --idle 30m, or idle_stop under "
                f"[hosts.{p.host}] in config.toml.",
            )
        if command is None:
            raise app_error(
                Kind.INVALID_COMMAND,
                f"arming the guard needs a command to run: --then 'COMMAND', or terminate "
                f"under [hosts.{p.host}] in config.toml.",
            )
        command = check_guard_command(command)
    elif (
        p.idle_seconds is not None
        or p.command is not None
        or p.ignore_sessions
        or p.stalled_idle is not None
    ):
        raise app_error(
            Kind.INVALID_COMMAND,
            f"an idle period, a command, ignoreSessions or stalledIdle go with `arm`, not "
            f"`{p.action}`.",
        )
    stalled_idle = p.stalled_idle if p.stalled_idle is not None else settings.stalled_idle
    transport = await ops.transport(p.host)
    # A guard config.toml asks for is armed first; the person's word comes after it.
    ops.arm_configured_guard(p.host)
    await ops.guards.settled(p.host)
    if p.action == "arm":
        assert idle_seconds is not None and command is not None
        shown = await guard_scripts.guard_arm(
            transport, workdir, idle_seconds, p.ignore_sessions, command, stalled_idle
        )
    elif p.action == "off":
        shown = await guard_scripts.guard_off(transport, workdir)
    else:
        shown = await guard_scripts.guard_show(transport, workdir)
    if not shown.ok or (p.action == "arm" and not shown.armed):
        doing = {"arm": "arming", "off": "disarming", "show": "reading"}[p.action]
        raise app_error(
            Kind.REMOTE_FAILED, f"{p.host}: {doing} the guard failed: {shown.error_text}"
        )
    state = guard_state(shown, time.time())
    ops.guards.remember(p.host, workdir, state)
    return GuardResult(host=p.host, workdir=workdir, guard=state)
