"""run/stop: take every process of the run off the host, and say so only once it is true."""

from __future__ import annotations

import msgspec

from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import RunRef, StopParams, StopResult

from .context import Ops
from .status import from_row
from .status import status as run_status


async def stop(ops: Ops, p: StopParams) -> StopResult:
    run_dir = ops.run_dir(p.host, p.run_id, p.workdir)
    if not 0 <= p.grace <= 3600:
        raise app_error(Kind.INVALID_COMMAND, "grace must be between 0 and 3600 seconds.")
    args = [run_dir, p.run_id, f"{p.grace:.1f}", "1" if p.force else "0"]
    retried = False
    transport = await ops.transport(p.host)
    try:
        done = await transport.run("stop", args, timeout=p.grace + 60)
    except RpcError as error:
        if error.kind not in (Kind.HOST_UNREACHABLE, Kind.TIMEOUT):
            raise
        # The answer was lost with the connection, perhaps after signals went out. A stop is
        # safe to repeat, and the repeat tells how the run stands now.
        retried = True
        try:
            transport = await ops.transport(p.host)
            done = await transport.run("stop", args, timeout=p.grace + 60)
        except RpcError as again:
            if again.kind not in (Kind.HOST_UNREACHABLE, Kind.TIMEOUT):
                raise
            raise app_error(
                again.kind or Kind.HOST_UNREACHABLE,
                f"the connection to {p.host} dropped during the stop of {p.run_id}, perhaps "
                "after the run was signalled; whether it stopped is not known until the host "
                f"answers: `rtrain status {p.host} {p.run_id}` tells ({again.message}).",
            ) from None
    fields = done.fields()
    outcome = (fields.get("outcome") or [""])[0]
    if outcome == "refused":
        reason = (fields.get("reason") or ["the pid file does not name this run"])[0]
        raise app_error(Kind.STOP_REFUSED, f"refused to stop {p.run_id} on {p.host}: {reason}.")
    if outcome == "survived":
        pids = (fields.get("survivors") or [""])[0].split()
        raise app_error(
            Kind.STOP_REFUSED,
            f"{p.run_id} on {p.host} did not stop: process(es) {', '.join(pids)} survived "
            f"SIGTERM for {p.grace:g} s; use --force to send SIGKILL.",
            survivors=[int(x) for x in pids if x.isdigit()],
        )
    if outcome not in ("stopped", "not_running"):
        if done.returncode == 9 or b"no run" in done.stderr:
            raise app_error(Kind.RUN_NOT_FOUND, f"no run {p.run_id} on {p.host}.")
        raise app_error(Kind.REMOTE_FAILED, f"{p.host}: stop failed: {done.error_text}")
    killed = [int(x) for x in (fields.get("killed") or [""])[0].split() if x.isdigit()]
    ref = RunRef(host=p.host, run_id=p.run_id, workdir=p.workdir)
    # stop.sh says how the run stands once nothing of it is left (should its last line be
    # missing, ask as status does).
    rows = done.rows("run")
    run = from_row(ops, ref, rows[0]) if rows else (await run_status(ops, ref)).run
    if retried and outcome == "not_running" and run.state == "stopped":
        outcome = "stopped"  # by this request's first attempt, whose answer was lost
    if outcome == "stopped" and run.state == "running":
        # The far side saw nothing alive a moment ago; trust the later look, but say it.
        run = msgspec.structs.replace(run, reason="still running after stop")
    return StopResult(outcome=outcome, killed=killed, run=run)  # type: ignore[arg-type]
