"""run/stop: take every process of the run off the host, and say so only once it is true."""

from __future__ import annotations

import time
from typing import NoReturn

import msgspec

from rtrain.daemon.registry import PendingStop
from rtrain.daemon.remote.contract.run_scripts import StopReport
from rtrain.daemon.run_retries import due as retry_due
from rtrain.daemon.ssh.failures import answer_may_be_lost
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import RunInfo, RunRef, StopParams, StopResult

from .context import DaemonState
from .run_proof import refuse_unless_run
from .status import from_row
from .status import status as run_status


async def stop(ops: DaemonState, p: StopParams) -> StopResult:
    run_dir = ops.run_dir(p.host, p.run_id, p.workdir)
    if p.grace is not None and not 0 <= p.grace <= 3600:
        raise app_error(Kind.INVALID_COMMAND, "grace must be between 0 and 3600 seconds.")
    known = ops.known(p.host, p.run_id)
    launcher = ops.launcher_of(known) if known is not None else ops.run_launcher(p.host, None)
    grace = p.grace if p.grace is not None else launcher.default_grace
    retried = False
    try:
        report = await launcher.stop(run_dir, p.run_id, grace, p.force)
    except RpcError as error:
        if not answer_may_be_lost(error):
            raise
        # The answer was lost with the connection, perhaps after signals went out. A stop is
        # safe to repeat, and the repeat tells how the run stands now.
        retried = True
        try:
            report = await launcher.stop(run_dir, p.run_id, grace, p.force)
        except RpcError as again:
            if not answer_may_be_lost(again):
                raise
            raise app_error(
                again.kind or Kind.HOST_UNREACHABLE,
                f"the connection to {p.host} dropped during the stop of {p.run_id}, perhaps "
                "after the run was signalled; whether it stopped is not known until the host "
                f"answers: `rtrain status {p.host} {p.run_id}` tells ({again.message}).",
            ) from None
    refuse_unless_run(report, p.host, p.run_id, run_dir, "nothing was stopped")
    earlier = ops.registry.pending_stop(p.host, p.run_id)
    outcome = report.outcome
    if outcome == "pending":
        _keep_pending(ops, p, report, grace, earlier)
    _refuse_unless_stopped(p, report, grace)
    ref = RunRef(host=p.host, run_id=p.run_id, workdir=p.workdir)
    # stop.sh says how the run stands once nothing of it is left (should its last line be
    # missing, ask as status does); a missing run is run_not_found there.
    if report.run is not None:
        run = from_row(ops, ref, report.run)
    else:
        run = (await run_status(ops, ref)).run
    if retried and outcome == "not_running" and run.state == "stopped":
        outcome = "stopped"  # by this request's first attempt, whose answer was lost
    if earlier is not None:
        # The nodes that did not answer before are stopped now: the stop asked then is done.
        ops.registry.end_pending_stop(p.host, p.run_id)
        outcome = "stopped"
        if run.state != "stopped":
            run = ops.record(
                msgspec.structs.replace(run, state="stopped", reason=None), stop_done=True
            )
    run, cancelled = _end_retries(ops, run)
    if outcome == "stopped" and run.state == "running":
        # The far side saw nothing alive a moment ago; trust the later look, but say it.
        run = msgspec.structs.replace(run, reason="still running after stop")
    return StopResult(
        outcome=outcome,  # type: ignore[arg-type]
        killed=report.killed,
        run=run,
        retries_cancelled=cancelled,
    )


def _refuse_unless_stopped(p: StopParams, report: StopReport, grace: float) -> None:
    """One sentence for a stop that did not end the run: refused, or something survived."""
    outcome = report.outcome
    if outcome == "refused":
        reason = report.reason or "the pid file does not name this run"
        raise app_error(Kind.STOP_REFUSED, f"refused to stop {p.run_id} on {p.host}: {reason}.")
    if outcome == "survived" and not report.survivors:
        # A scheduler's job, not processes rtrain can name.
        raise app_error(Kind.STOP_REFUSED, f"{p.run_id} on {p.host} did not stop: {report.reason}.")
    if outcome == "survived":
        raise app_error(
            Kind.STOP_REFUSED,
            f"{p.run_id} on {p.host} did not stop: process(es) "
            f"{', '.join(map(str, report.survivors))} survived "
            f"SIGTERM for {grace:g} s; use --force to send SIGKILL.",
            survivors=report.survivors,
        )
    if outcome not in ("stopped", "not_running"):
        raise app_error(Kind.REMOTE_FAILED, f"{p.host}: stop failed: {report.error_text}")


def _end_retries(ops: DaemonState, run: RunInfo) -> tuple[RunInfo, int]:
    """A person's stop ends the retries the daemon would still start by itself: the run,
    and how many were left."""
    if not retry_due(run):
        return run, 0
    assert run.retry is not None
    cancelled = run.retry.limit - run.retry.used
    policy = msgspec.structs.replace(run.retry, limit=run.retry.used)
    return ops.record(msgspec.structs.replace(run, retry=policy)), cancelled


def _keep_pending(
    ops: DaemonState, p: StopParams, report: StopReport, grace: float, earlier: PendingStop | None
) -> NoReturn:
    """Some nodes of a run across hosts did not answer, the others stopped: the stop is kept
    in the registry (the monitor finishes it there once they answer) and the run is unknown,
    since those nodes may still train."""
    pending = PendingStop(
        nodes=report.pending,
        grace=grace,
        force=p.force,
        asked_at=earlier.asked_at if earlier is not None else time.time(),
    )
    ops.registry.set_pending_stop(p.host, p.run_id, pending)
    why = f"stop pending: {report.reason}"
    known = ops.known(p.host, p.run_id)
    if known is not None:
        ops.record(msgspec.structs.replace(known, state="unknown", reason=why))
    raise app_error(
        Kind.HOST_UNREACHABLE,
        f"{p.run_id} on {p.host} is not stopped yet: {report.reason}. Every other node "
        "was stopped; the daemon stops the rest as soon as they answer again "
        f"(`rtrain status {p.host} {p.run_id}` says when).",
        pending=report.pending,
    )
