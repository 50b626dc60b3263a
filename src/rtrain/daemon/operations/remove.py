"""run/remove: take runs off the host and out of the registry, once nothing of them runs."""

from __future__ import annotations

from rtrain.daemon.remote.contract import run_scripts
from rtrain.daemon.remote.contract.answers import Exit
from rtrain.daemon.remote.error_words import ErrorWord
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import RemovedRun, RemoveParams, RemoveResult, RunRef
from rtrain.protocol.run_states import is_live

from .context import DaemonState
from .run_proof import refuse_unless_run
from .status import status as run_status


async def remove(ops: DaemonState, p: RemoveParams) -> RemoveResult:
    """All or nothing as far as the daemon can tell: every run is checked (not running, not
    queued, not being started) before the first one is removed. A process of no run still
    working in a run dir (started there with exec) refuses that run's removal, naming it,
    unless `force` (then it is stopped first)."""
    validation.host(p.host)
    if not p.run_ids:
        raise app_error(Kind.INVALID_RUN_ID, "name at least one run to remove.")
    dirs = {run_id: ops.run_dir(p.host, run_id, p.workdir) for run_id in p.run_ids}
    for run_id in p.run_ids:
        if (p.host, run_id) in ops.starting:
            raise _active(p.host, run_id, "is still being started")
        run = (await run_status(ops, RunRef(host=p.host, run_id=run_id, workdir=p.workdir))).run
        if is_live(run.state):
            raise _active(
                p.host, run_id, f"is {run.state}; stop it first: rtrain stop {p.host} {run_id}"
            )
        if run.state == "unknown":
            raise app_error(
                Kind.HOST_UNREACHABLE,
                f"cannot remove {run_id}: whether it runs on {p.host} is not known "
                f"({run.reason or 'the host did not answer'}).",
            )
    transport = await ops.transport(p.host)
    removed = []
    for run_id, run_dir in dirs.items():
        done = await run_scripts.remove(transport, run_dir, run_id, p.force)
        refuse_unless_run(done, p.host, run_id, run_dir, "nothing was removed")
        if done.refused == ErrorWord.BUSY:
            raise app_error(
                Kind.RUN_ACTIVE,
                f"cannot remove {run_id} on {p.host}: {_named(done.dwellers)} still "
                f"run{'s' if len(done.dwellers) == 1 else ''} in its run directory; "
                f"`rtrain rm --force {p.host} {run_id}` stops "
                f"{'it' if len(done.dwellers) == 1 else 'them'} and removes the run. "
                "Nothing was removed.",
                pids=[d.pid for d in done.dwellers],
            )
        if done.exit == Exit.SURVIVED:
            raise app_error(
                Kind.STOP_REFUSED,
                f"cannot remove {run_id} on {p.host}: pid "
                f"{', '.join(str(d.pid) for d in done.dwellers)} survived SIGKILL in its run "
                "directory; nothing was removed.",
            )
        if done.refused:
            raise _active(p.host, run_id, f"is {done.refused} (it started meanwhile)")
        if not done.ok:
            why = str(done.error or "") or done.error_text
            raise app_error(Kind.REMOTE_FAILED, f"{p.host}: removing {run_id} failed: {why}")
        known = ops.known(p.host, run_id)
        ops.registry.delete(p.host, run_id)
        ops.metrics.forget(p.host, run_id)  # an id used again starts with no points
        if known is not None:
            ops.publish_removed(known)  # an open run tree drops it at once
        removed.append(RemovedRun(run_id=run_id, remote_dir=run_dir, had_dir=done.had_dir))
    return RemoveResult(removed=removed)


def _named(dwellers: list[run_scripts.Dweller]) -> str:
    """`pid 812 (tensorboard --logdir .)`, for each process, in one phrase."""
    return ", ".join(f"pid {d.pid} ({d.command.strip() or '?'})" for d in dwellers)


def _active(host: str, run_id: str, why: str) -> Exception:
    return app_error(
        Kind.RUN_ACTIVE, f"cannot remove {run_id} on {host}: it {why}; nothing was removed."
    )
