"""run/status, and the batched refresh of many runs of one host in one remote command."""

from __future__ import annotations

import posixpath
from collections import defaultdict

from rtrain.daemon.remote.contract.answers import Exit
from rtrain.daemon.remote.contract.run_scripts import RunRow
from rtrain.daemon.ssh.failures import host_did_not_answer
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import RunInfo, RunRef, StatusResult
from rtrain.protocol.run_states import is_settled

from .context import DaemonState, launcher_group
from .run_state import apply_row
from .watch import watch_host


async def status(ops: DaemonState, p: RunRef) -> StatusResult:
    run_dir = ops.run_dir(p.host, p.run_id, p.workdir)
    settled = _settled(ops, p)
    if settled is not None:
        return StatusResult(run=settled)
    base = _base(ops, p, run_dir)
    known = ops.known(p.host, p.run_id)
    if p.workdir is None and known is not None and ops.registry.pending_stop(p.host, p.run_id):
        # Some nodes did not answer a stop: the monitor finishes it once they do (stop.py);
        # until then the run is unknown, never a node's own end read meanwhile.
        return StatusResult(run=known)
    try:
        if not ops.launcher_of(base).states_from_status:
            # watch.sh: the same one round trip also brings the log's new lines, so the
            # latest values shown are as of now, not of the last poll (docs/metrics.md).
            [fresh], _ = await watch_host(ops, p.host, [base], gpus=False)
        else:
            [fresh] = await refresh(ops, p.host, [base])
    except RpcError as error:
        if host_did_not_answer(error):
            run = ops.mark_unknown(p.host, p.run_id, error)
            if error.kind == Kind.LOGIN_REQUIRED:
                raise  # the user has a step to take first: the error says which
            return StatusResult(run=run)
        raise
    return StatusResult(run=_settle(ops, p, run_dir, fresh))


def from_row(ops: DaemonState, p: RunRef, row: RunRow) -> RunInfo:
    """The run as a status.sh `run` row another script printed says it stands; recorded."""
    settled = _settled(ops, p)
    if settled is not None:
        return settled
    run_dir = ops.run_dir(p.host, p.run_id, p.workdir)
    return _settle(ops, p, run_dir, apply_row(_base(ops, p, run_dir), row))


def _settled(ops: DaemonState, p: RunRef) -> RunInfo | None:
    """The registry's answer where the far side's is not needed, or would mislead."""
    known = ops.known(p.host, p.run_id)
    if known is not None and is_settled(known.state) and p.workdir is None:
        return known
    if known is not None and (p.host, p.run_id) in ops.starting:
        return known  # its start decides; the far side would say "lost"
    return None


def _base(ops: DaemonState, p: RunRef, run_dir: str) -> RunInfo:
    return ops.known(p.host, p.run_id) or RunInfo(
        host=p.host,
        run_id=p.run_id,
        state="unknown",
        remote_dir=run_dir,
        log_path=f"{run_dir}/train.log",
        workdir=posixpath.dirname(run_dir),
    )


def _settle(ops: DaemonState, p: RunRef, run_dir: str, fresh: RunInfo | None) -> RunInfo:
    now_known = ops.known(p.host, p.run_id)
    if (
        fresh is not None
        and now_known is not None
        and len(now_known.attempts) > len(fresh.attempts)
    ):
        # A restart (or the daemon's retry) recorded its new attempt while this look was
        # under way: the look is of the attempt before it, and would undo that record.
        return now_known
    if fresh is None:
        raise app_error(
            Kind.RUN_NOT_FOUND,
            f"no run {p.run_id} on {p.host} (looked in "
            f"{run_dir}); check the run id, or pass --workdir if it was started "
            "with another one.",
            runId=p.run_id,
        )
    return ops.record(fresh)


async def refresh(ops: DaemonState, host: str, runs: list[RunInfo]) -> list[RunInfo | None]:
    """Ask the host about `runs` in one command per workdir (and per kind of launcher the
    runs recorded: the host's own processes, or a scheduler's jobs); None for a run that is
    gone."""
    groups: dict[tuple[str, bool, str], list[RunInfo]] = defaultdict(list)
    for run in runs:
        remote_dir = run.remote_dir or f"{run.workdir}/{run.run_id}"
        groups[(posixpath.dirname(remote_dir), *launcher_group(ops, run))].append(run)
    found: dict[str, RunRow] = {}
    for (workdir, _, _), members in groups.items():
        launcher = ops.launcher_of(members[0])
        report = await launcher.status(workdir, [r.run_id for r in members])
        if report.exit != Exit.OK and not report.runs:
            raise app_error(Kind.REMOTE_FAILED, f"{host}: status failed: {report.error_text}")
        found.update(report.runs)
    return [apply_row(run, found[run.run_id]) if run.run_id in found else None for run in runs]
