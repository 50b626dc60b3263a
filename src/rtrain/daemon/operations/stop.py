"""run/stop: take every process of the run off the host, and say so only once it is true."""

from __future__ import annotations

import msgspec

from rtrain.daemon.ssh.failures import answer_may_be_lost
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import RunRef, StopParams, StopResult

from .context import Ops
from .run_proof import refuse_unless_run
from .status import from_row
from .status import status as run_status


async def stop(ops: Ops, p: StopParams) -> StopResult:
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
    ref = RunRef(host=p.host, run_id=p.run_id, workdir=p.workdir)
    # stop.sh says how the run stands once nothing of it is left (should its last line be
    # missing, ask as status does); a missing run is run_not_found there.
    if report.run is not None:
        run = from_row(ops, ref, report.run)
    else:
        run = (await run_status(ops, ref)).run
    if retried and outcome == "not_running" and run.state == "stopped":
        outcome = "stopped"  # by this request's first attempt, whose answer was lost
    if outcome == "stopped" and run.state == "running":
        # The far side saw nothing alive a moment ago; trust the later look, but say it.
        run = msgspec.structs.replace(run, reason="still running after stop")
    return StopResult(outcome=outcome, killed=report.killed, run=run)  # type: ignore[arg-type]
