"""What a Slurm job's state means for the run it carries: sans-IO, one table.

Slurm's own name is kept where it says more than rtrain's state does: `failed (TIMEOUT)`,
`stopped (CANCELLED)`, `lost (NODE_FAIL)`. The run's own status file, when present, settles
the exit code, because sacct's ExitCode is that of the batch shell.
"""

from __future__ import annotations

import msgspec

from rtrain.daemon.launchers.slurm.contract import JobReport
from rtrain.protocol.run_states import RunState


class JobVerdict(msgspec.Struct, frozen=True):
    """The run's state as rtrain shows it."""

    state: RunState
    scheduler_state: str | None = None  # Slurm's name, shown in parentheses
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None


# Slurm's words, in three tables: waiting for an allocation, holding it, ended (and the run
# state each ending means). A word in none of them is `unknown`, never guessed.
SLURM_WAITING = {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"}
SLURM_HOLDING = {
    "CONFIGURING",
    "RUNNING",
    "COMPLETING",
    "SUSPENDED",
    "STOPPED",
    "SIGNALING",
    "STAGE_OUT",
    "RESIZING",
}
# An ended job's Slurm state -> (rtrain state, whether Slurm's name is shown).
SLURM_ENDED: dict[str, tuple[RunState, bool]] = {
    "COMPLETED": ("completed", False),
    "FAILED": ("failed", False),
    "TIMEOUT": ("failed", True),
    "OUT_OF_MEMORY": ("failed", True),
    "DEADLINE": ("failed", True),
    "BOOT_FAIL": ("lost", True),
    "NODE_FAIL": ("lost", True),
    "PREEMPTED": ("lost", True),
    "REVOKED": ("lost", True),
    "CANCELLED": ("stopped", True),
    "SPECIAL_EXIT": ("failed", True),
}

# squeue's pending reasons, in words a person reads without the Slurm manual.
PENDING_REASONS = {
    "Resources": "waiting for resources (GPUs or nodes) to free up{where}",
    "Priority": "waiting behind jobs of higher priority{where}",
    "Dependency": "waiting for the jobs it depends on",
    "BeginTime": "waiting for its begin time",
    "JobHeldUser": "held by its user (scontrol release JOBID)",
    "JobHeldAdmin": "held by an administrator",
    "PartitionDown": "waiting: the partition is down{where}",
    "PartitionInactive": "waiting: the partition is inactive{where}",
    "ReqNodeNotAvail": "waiting: a requested node is not available",
    "QOSMaxGRESPerUser": "waiting: your QOS limit on GPUs per user is reached",
    "QOSMaxJobsPerUserLimit": "waiting: your QOS limit on running jobs is reached",
    "AssocGrpGRES": "waiting: your account's GPU limit is reached",
    "AssocMaxJobsLimit": "waiting: your account's limit on running jobs is reached",
    "None": "waiting to be scheduled{where}",
}


def pending_sentence(reason: str, partition: str | None) -> str:
    """squeue's reason for a pending job as a sentence, keeping Slurm's word."""
    where = f" in partition {partition}" if partition else ""
    template = PENDING_REASONS.get(reason)
    if template is None:
        return f"waiting in the queue ({reason})" if reason else "waiting in the queue"
    return template.format(where=where) + f" ({reason})"


def verdict(job: JobReport, partition: str | None = None) -> JobVerdict:
    """The rtrain state of the run that job carries; `missing` is for the caller to handle
    (no run directory, or a run that was never submitted)."""
    if job.source == "none":
        # A job no source accounts for is never guessed as completed; its status file
        # alone still tells how the workload ended.
        if job.stop_requested and job.status_file is not None:
            return JobVerdict(
                state="stopped", exit_code=job.status_file, reason="stopped on request"
            )
        if job.status_file is not None:
            return _from_status_file(job)
        return JobVerdict(state="unknown", reason=job.reason)
    name = job.state.split(" ")[0].rstrip("+")
    if name in SLURM_WAITING:
        return JobVerdict(
            state="queued", scheduler_state=name, reason=pending_sentence(job.reason, partition)
        )
    if name in SLURM_HOLDING:
        reason = "the job is completing (Slurm is cleaning up)" if name == "COMPLETING" else None
        return JobVerdict(state="running", scheduler_state=name, reason=reason)
    mapped = SLURM_ENDED.get(name)
    if mapped is None:
        return JobVerdict(state="unknown", scheduler_state=name, reason=f"Slurm state {name}")
    state, show = mapped
    if job.stop_requested and name != "CANCELLED":
        # rtrain's stop signals the workload itself: the job then ends FAILED or COMPLETED
        # in Slurm's eyes, but the person asked for it to stop.
        return JobVerdict(
            state="stopped",
            exit_code=job.status_file,
            reason="stopped on request",
        )
    if name in ("COMPLETED", "FAILED") and job.status_file is not None:
        return _from_status_file(job)
    exit_code = job.status_file if job.status_file is not None else job.exit_code
    return JobVerdict(
        state=state,
        scheduler_state=name if show else None,
        exit_code=exit_code,
        signal=job.signal or None,
        reason=_ended_reason(name),
    )


def _from_status_file(job: JobReport) -> JobVerdict:
    code = job.status_file or 0
    if code == 0:
        return JobVerdict(state="completed", exit_code=0)
    signal = code - 128 if code > 128 else None
    # `setup` reads as `failed (setup, exit N)`, as on any host; else why, as on any host.
    reason = "setup" if job.setup_failed else job.why
    return JobVerdict(state="failed", exit_code=code, signal=signal, reason=reason)


def _ended_reason(name: str) -> str | None:
    return {
        "TIMEOUT": "the job reached its time limit",
        "OUT_OF_MEMORY": "the job ran out of memory",
        "NODE_FAIL": "the node running the job failed",
        "BOOT_FAIL": "the node failed to boot",
        "PREEMPTED": "the job was preempted by another",
        "CANCELLED": "the job was cancelled",
        "DEADLINE": "the job missed its deadline",
    }.get(name)
