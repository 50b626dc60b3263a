"""The `slurm` launcher: a run is one batch job, submitted through the login node.

Slurm schedules; rtrain asks. Start is `sbatch` of a batch script kept in the run dir, status
one `squeue` (then one `sacct`) per host for all of its runs, stop `scancel` until Slurm says
the job is over. Files live in the run dir on the login node, as for any host: clusters share
their home and work file systems with the compute nodes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec

from rtrain.daemon.launchers.launcher import SchedulerVerdict
from rtrain.daemon.launchers.over_transport import OverTransport
from rtrain.daemon.launchers.placement import Placement
from rtrain.daemon.remote.contract.answers import Answer
from rtrain.daemon.remote.contract.launch_scripts import LaunchAhead, Launched, split_launch_stdin
from rtrain.daemon.remote.contract.run_scripts import RunRow, StatusReport, StopReport
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.launcher_options import SlurmOptions, asks_torchrun
from rtrain.protocol.messages import PreflightParams, StartParams
from rtrain.protocol.run_states import is_live

from .batch_script import (
    SlurmRequest,
    batch_script,
    check_request,
    sbatch_args,
)
from .contract import slurm_cancel, slurm_poll, slurm_submit
from .job_states import verdict
from .preflight import partition_findings


class SlurmLauncher(OverTransport):
    name = "slurm"
    runs_on_host = False
    states_from_status = True
    scheduler = "slurm"

    def __init__(self, where: Placement) -> None:
        super().__init__(where)
        # The host's config.toml keys (none, once the config lost them: a recorded job is
        # watched and stopped by its id, restarted with its recorded options); a run's own
        # options win over them.
        s = where.settings
        self.defaults = SlurmRequest(
            partition=s.partition,
            account=s.account,
            qos=s.qos,
            time=s.time,
            gres_type=s.gres_type,
            extra_args=tuple(s.sbatch_args),
        )

    @classmethod
    def given_options(cls, p: StartParams) -> list[str]:
        o = p.launcher
        if not isinstance(o, SlurmOptions):
            return []
        return [
            option
            for option, value in (
                ("--partition", o.partition),
                ("--time", o.time),
                ("--nodes", o.nodes != 1),
                ("--signal-before-timeout", o.signal_before_timeout),
                ("--requeue", o.requeue),
            )
            if value
        ]

    @classmethod
    def options_belong(cls, host: str) -> str:
        return (
            f"apply to Slurm hosts only, and {host} is not one "
            f'(set scheduler = "slurm" under [hosts.{host}] in config.toml)'
        )

    async def preflight(self, p: PreflightParams, workdir: str) -> SchedulerVerdict:
        # On a cluster's login node the GPUs are Slurm's to count, not nvidia-smi's.
        return await partition_findings(
            await self.transport(), p, workdir, p.partition or self.defaults.partition
        )

    def options_problem(self, p: StartParams) -> str | None:
        if p.reverse:
            return self.reverse_forward_problem(p.host, 1)
        # Values Slurm would misread.
        return check_request(self.request(p))

    def with_limits(self, p: StartParams, max_duration: int | None, retried: bool) -> StartParams:
        """A batch job's maximum duration is its time limit: Slurm ends it there. Slurm
        requeues a job whose node failed or that was preempted by itself, as often as the
        cluster allows; the daemon's retry covers a job it reports lost."""
        o = _options(p)
        if max_duration:
            if o.time is not None and p.max_duration is not None:
                raise app_error(
                    Kind.INVALID_COMMAND,
                    f"on {p.host}, a Slurm host, --max-duration becomes the job's --time: "
                    "give one of them, not both.",
                )
            if o.time is None:  # the run's own --time wins over the host's max_duration
                o = msgspec.structs.replace(o, time=slurm_time(max_duration))
        if retried:
            o = msgspec.structs.replace(o, requeue=True)
        return msgspec.structs.replace(p, launcher=o) if o != _options(p) else p

    def request(self, params: StartParams | None) -> SlurmRequest:
        """What a run asks of Slurm: the host's defaults, overridden by the run's options."""
        if params is None:
            return self.defaults
        d = self.defaults
        o = _options(params)
        return SlurmRequest(
            partition=o.partition or d.partition,
            account=d.account,
            qos=d.qos,
            time=o.time or d.time,
            gres_type=d.gres_type,
            gpus=params.gpus,
            nodes=o.nodes,
            signal_before_timeout=o.signal_before_timeout,
            requeue=o.requeue,
            extra_args=d.extra_args,
        )

    async def launch(
        self,
        run_dir: str,
        run_id: str,
        python: str,
        command: Sequence[str],
        secrets: bytes,
        params: StartParams | None = None,
        ahead: LaunchAhead | None = None,
    ) -> Launched:
        request = self.request(params)
        given = split_launch_stdin(secrets)
        recorded = given.meta.get("sbatch")
        if params is None and isinstance(recorded, list) and recorded:
            # A restart: the job asks Slurm for what the first attempt asked.
            args = [str(word) for word in recorded]
        else:
            args = sbatch_args(request, run_id, run_dir)
        # A restart's image is the first attempt's, recorded in meta.json.
        image = params.image if params is not None else given.meta.get("image")
        script = batch_script(
            run_id,
            run_dir,
            command,
            given.env,
            args,
            given.setup,
            request.nodes,
            image=image if isinstance(image, str) and image else None,
        )
        # What a restart reads back: the keys launch.sh records, and Slurm's own.
        meta: dict[str, object] = {
            "attempt": given.attempt,
            **given.meta,
            "launcher": self.name,
            "python": python,
            "command": list(command),
            "sbatch": args,
        }
        return await slurm_submit(
            await self.transport(),
            run_dir,
            run_id,
            given.attempt,
            meta,
            script,
            args,
            given.secrets,
        )

    async def status(self, workdir: str, run_ids: Sequence[str]) -> StatusReport:
        poll = await slurm_poll(await self.transport(), workdir, run_ids)
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

    async def stop(self, run_dir: str, run_id: str, grace: float, force: bool) -> StopReport:
        workdir = run_dir.rpartition("/")[0]
        before = (await self.status(workdir, [run_id])).runs.get(run_id)
        if before is None or not is_live(before.state):
            # Nothing to cancel (or no such run: the operation says run_not_found).
            return _report("not_running", before, None)
        cancelled = await slurm_cancel(await self.transport(), run_dir, run_id, grace)
        after = (await self.status(workdir, [run_id])).runs.get(run_id)
        if cancelled.over:
            return _report("stopped", after, None, cancelled)
        # Still COMPLETING, or not over at all: say so, never "stopped".
        state = cancelled.state or (after.scheduler_state if after else None) or "running"
        return _report("survived", after, f"Slurm still shows the job {state}", cancelled)


def _report(
    outcome: str,
    run: RunRow | None,
    reason: str | None,
    answer: Answer | None = None,
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


def slurm_time(seconds: int) -> str:
    """A maximum duration as Slurm's --time: whole minutes (Slurm's own unit), rounded up."""
    minutes = math.ceil(seconds / 60)
    days, minutes = divmod(minutes, 24 * 60)
    clock = f"{minutes // 60:02d}:{minutes % 60:02d}:00"
    return f"{days}-{clock}" if days else clock


def _options(p: StartParams) -> SlurmOptions:
    """The start's Slurm options: its own, or none given (a start that names only
    `process` or `torchrun`, or nothing, asks Slurm for the host's defaults; whether it
    runs torchrun is kept)."""
    if isinstance(p.launcher, SlurmOptions):
        return p.launcher
    return SlurmOptions(torchrun=asks_torchrun(p.launcher))
