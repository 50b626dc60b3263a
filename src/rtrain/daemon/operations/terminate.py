"""host/terminate: run a host's terminate command now (docs/guard.md)."""

from __future__ import annotations

import asyncio
import logging

from rtrain.daemon.remote.contract import guard_scripts
from rtrain.daemon.ssh.failures import answer_may_be_lost
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import TerminateResult
from rtrain.protocol.run_states import is_active

from .context import DaemonState

log = logging.getLogger(__name__)

# How long the daemon waits for the command to end before it answers `running` (it goes on,
# in a session of its own on the host, its output in the guard's log).
TERMINATE_WAIT = 60


async def terminate_host(
    ops: DaemonState, host: str, *, force: bool, workdir: str | None = None
) -> TerminateResult:
    """Run `host`'s terminate command now: config.toml's `terminate` for the host, else the
    command its guard was armed with. The one entry point for `rtrain terminate` and for
    any pipeline that ends a host (train -> fetch -> terminate).

    Unless `force`, it refuses, raising RpcError kind `host_busy` (`data.busy`: why) and
    running nothing, while a transfer of this daemon to or from the host is in flight, or
    the host itself says a run in `workdir` (None: the host's configured one, else
    ~/.rtrain) or in the work directory of an active run the registry knows there is
    running, queued or in its setup, or a transfer lease (any daemon's) is live. Leases
    this daemon dropped are waited for first, so a fetch that just returned never counts.
    Open ssh sessions do not count.

    Other errors: `no_terminate_command` (nothing configured, no guard's command: the
    message says what to set), the connection errors of any host request when the host
    cannot be reached before the command starts, `remote_failed`.

    The command runs on the host in a session of its own and is logged in the guard's log.
    The result says `ended` (with `exitCode` and the last lines of `output`: check
    `exitCode`, a command can fail), `running` (still going after 60 s), or `disconnected`:
    the connection ended while it ran, which is how a host that shuts down answers.
    """
    validation.host(host)
    chosen = ops.host_workdir(host, workdir)
    configured = ops.hosts.config.host(host).terminate
    if not force:
        _refuse_busy_here(ops, host)
    transport = await ops.transport(host)
    await ops.leases.settled(host)
    if not force:
        await _refuse_busy_elsewhere(ops, transport, host, chosen)
    try:
        done = await guard_scripts.terminate(
            transport, chosen, configured, force=force, wait=TERMINATE_WAIT
        )
    except RpcError as error:
        if not answer_may_be_lost(error):
            raise
        # A host that powers off takes the connection with it, maybe before it answers.
        log.info("terminate %s: %s", host, error.message)
        return _disconnected(ops, host, chosen, configured)
    return _outcome(host, configured, done)


def _refuse_busy_here(ops: DaemonState, host: str) -> None:
    """Busy by what this daemon itself does with the host: a transfer, a start."""
    if ops.leases.holding(host):
        raise _busy(host, f"a transfer to or from {host} is in flight")
    if any(key[0] == host for key in ops.starting):
        raise _busy(host, f"a run is being started on {host}")


async def _refuse_busy_elsewhere(
    ops: DaemonState, transport: Transport, host: str, chosen: str
) -> None:
    """Runs the registry knows in other work directories of the host count too."""
    others = {
        validation.workdir(run.workdir)
        for run in ops.registry.list(host=host)
        if run.workdir and is_active(run.state)
    } - {chosen}
    looks = await asyncio.gather(
        *(guard_scripts.host_look(transport, other, True) for other in sorted(others))
    )
    for look in looks:
        if look.busy is not None or not look.ok:
            raise _busy(host, look.busy or look.error_text)


def _disconnected(
    ops: DaemonState, host: str, chosen: str, configured: str | None
) -> TerminateResult:
    # What it ran, as far as this daemon knows: the guard's as it last read it.
    last = ops.guards.last(host)
    known = last[1].command if last is not None and last[0] == chosen else None
    return TerminateResult(
        host=host,
        command=configured or known or "",
        source="config" if configured is not None else "guard",
        outcome="disconnected",
    )


def _outcome(host: str, configured: str | None, done: guard_scripts.Terminated) -> TerminateResult:
    """The result of a terminate command the host answered about, or its refusal."""
    if done.busy is not None:
        raise _busy(host, done.busy)
    if done.no_command:
        raise app_error(
            Kind.NO_TERMINATE_COMMAND,
            f'{host} has no terminate command: set `terminate = "COMMAND"` under '
            f"[hosts.{host}] in config.toml, or arm its guard with "
            f"`rtrain guard {host} --idle 30m --then 'COMMAND'`.",
        )
    if done.started_at is None:
        raise app_error(
            Kind.REMOTE_FAILED, f"{host}: the terminate command did not start: {done.error_text}"
        )
    return TerminateResult(
        host=host,
        command=configured if configured is not None else (done.command or ""),
        source="config" if configured is not None else "guard",
        outcome="running" if done.running else "ended",
        exit_code=done.exit_code,
        output=done.output,
    )


def _busy(host: str, why: str) -> RpcError:
    return app_error(
        Kind.HOST_BUSY,
        f"{host} is busy ({why}), so it was not terminated; --force terminates it anyway.",
        busy=why,
    )
