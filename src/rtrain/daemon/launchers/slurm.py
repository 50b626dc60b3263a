"""The `slurm` launcher: a run is one batch job, submitted through the login node.

Slurm schedules; rtrain asks. Start is `sbatch` of a batch script kept in the run dir, status
one `squeue` (then one `sacct`) per host for all of its runs, stop `scancel` until Slurm says
the job is over. Files live in the run dir on the login node, as for any host: clusters share
their home and work file systems with the compute nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

from rtrain.daemon.remote import contract
from rtrain.daemon.remote.contract import Launched, RunRow, StatusReport, StopReport
from rtrain.daemon.slurm.batch_script import (
    SlurmRequest,
    batch_script,
    check_request,
    sbatch_args,
)
from rtrain.daemon.slurm.job_states import verdict
from rtrain.daemon.ssh.transport import Transport
from rtrain.protocol.messages import PreflightParams, StartParams
from rtrain.protocol.run_states import is_live

from .launcher import Launcher
from .slurm_preflight import ClusterVerdict, partition_findings


class SlurmLauncher(Launcher):
    name = "slurm"
    runs_on_host = False
    states_from_status = True

    def __init__(self, defaults: SlurmRequest) -> None:
        # The host's config.toml keys; a run's own options win over them.
        self.defaults = defaults

    async def scheduler_preflight(
        self, transport: Transport, p: PreflightParams, workdir: str
    ) -> ClusterVerdict:
        # On a cluster's login node the GPUs are Slurm's to count, not nvidia-smi's.
        return await partition_findings(
            transport, p, workdir, p.partition or self.defaults.partition
        )

    def scheduler_problem(self, p: StartParams) -> str | None:
        # Values Slurm would misread.
        return check_request(self.request(p))

    def request(self, params: StartParams | None) -> SlurmRequest:
        """What a run asks of Slurm: the host's defaults, overridden by the run's options."""
        if params is None:
            return self.defaults
        d = self.defaults
        return SlurmRequest(
            partition=params.partition or d.partition,
            account=d.account,
            qos=d.qos,
            time=params.time or d.time,
            gres_type=d.gres_type,
            gpus=params.gpus,
            nodes=params.nodes,
            signal_before_timeout=params.signal_before_timeout,
            requeue=params.requeue,
            extra_args=d.extra_args,
        )

    async def launch(
        self,
        transport: Transport,
        run_dir: str,
        run_id: str,
        python: str,
        command: Sequence[str],
        secrets: bytes,
        params: StartParams | None = None,
    ) -> Launched:
        request = self.request(params)
        given = contract.split_launch_stdin(secrets)
        recorded = given.meta.get("sbatch")
        if params is None and isinstance(recorded, list) and recorded:
            # A restart: the job asks Slurm for what the first attempt asked.
            args = [str(word) for word in recorded]
        else:
            args = sbatch_args(request, run_id, run_dir)
        script = batch_script(run_id, run_dir, command, given.env, args, given.setup, request.nodes)
        # What a restart reads back: the keys launch.sh records, and Slurm's own.
        meta: dict[str, object] = {
            "attempt": given.attempt,
            **given.meta,
            "launcher": self.name,
            "python": python,
            "command": list(command),
            "sbatch": args,
        }
        return await contract.slurm_submit(
            transport, run_dir, run_id, given.attempt, meta, script, args, given.secrets
        )

    async def status(
        self, transport: Transport, workdir: str, run_ids: Sequence[str]
    ) -> StatusReport:
        poll = await contract.slurm_poll(transport, workdir, run_ids)
        runs: dict[str, RunRow] = {}
        for run_id, job in poll.jobs.items():
            if job.source == "missing":
                runs[run_id] = RunRow(run_id=run_id, state="missing", detail=job.reason)
                continue
            seen = verdict(job, self.defaults.partition)
            runs[run_id] = RunRow(
                run_id=run_id,
                state=seen.state,
                exit_code=seen.exit_code,
                signal=seen.signal,
                detail=seen.reason,
                job_id=job.job_id,
                scheduler_state=seen.scheduler_state,
            )
        return StatusReport(runs=runs, exit=poll.exit, error_text=poll.error_text)

    async def stop(
        self, transport: Transport, run_dir: str, run_id: str, grace: float, force: bool
    ) -> StopReport:
        workdir = run_dir.rpartition("/")[0]
        before = (await self.status(transport, workdir, [run_id])).runs.get(run_id)
        if before is None or not is_live(before.state):
            # Nothing to cancel (or no such run: the operation says run_not_found).
            return _report("not_running", before, None)
        cancelled = await contract.slurm_cancel(transport, run_dir, run_id, grace)
        after = (await self.status(transport, workdir, [run_id])).runs.get(run_id)
        if cancelled.over:
            return _report("stopped", after, None, cancelled)
        # Still COMPLETING, or not over at all: say so, never "stopped".
        state = cancelled.state or (after.scheduler_state if after else None) or "running"
        return _report("survived", after, f"Slurm still shows the job {state}", cancelled)


def _report(
    outcome: str,
    run: RunRow | None,
    reason: str | None,
    answer: contract.Answer | None = None,
) -> StopReport:
    return StopReport(
        outcome=outcome,
        reason=reason,
        survivors=[],
        killed=[],
        run=run,
        exit=answer.exit if answer else 0,
        error_text=answer.error_text if answer else "",
    )


def slurm_launcher(
    partition: str | None,
    account: str | None,
    qos: str | None,
    time: str | None,
    gres_type: str | None,
    sbatch_args: Sequence[str],
) -> SlurmLauncher:
    return SlurmLauncher(
        SlurmRequest(
            partition=partition,
            account=account,
            qos=qos,
            time=time,
            gres_type=gres_type,
            extra_args=tuple(sbatch_args),
        )
    )
