"""The Slurm launcher's far-side scripts (scripts/slurm_*.sh), each with its typed answer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from rtrain.daemon.remote.contract.answers import Answer, Exit, Lines, as_float, as_int, said
from rtrain.daemon.remote.contract.launch_scripts import Launched
from rtrain.daemon.remote.error_words import ErrorWord, FarError
from rtrain.daemon.transports.transport import Transport


async def slurm_submit(
    transport: Transport,
    run_dir: str,
    run_id: str,
    attempt: int,
    meta: Mapping[str, object],
    batch_script: str,
    sbatch_args: Sequence[str],
    secrets: bytes,
) -> Launched:
    """slurm_submit.sh: the batch script kept in the run dir and submitted; `job_id`, or
    why not (`error`: `sbatch_refused SBATCH'S WORDS`, `already_launched`, ...). `meta` goes
    into meta.json, one `"key": JSON` line each, as launch.sh writes its own."""
    meta_lines = "".join(
        f"  {msgspec.json.encode(key).decode()}: {msgspec.json.encode(value).decode()},\n"
        for key, value in meta.items()
    )
    done = await transport.run(
        "launchers.slurm:slurm_submit",
        [run_dir, run_id, str(attempt), meta_lines, batch_script, *sbatch_args],
        stdin=secrets,
        timeout=60,
    )
    lines = Lines(done.stdout)
    job = lines.value("job") if done.returncode == Exit.OK else None
    return Launched(
        pid=None,
        job_id=job or None,
        started_at=as_float(lines.value("started_at")),
        error=lines.error(),
        already_launched=said(lines, ErrorWord.ALREADY_LAUNCHED),
        exit=done.returncode,
        error_text=done.error_text,
    )


class JobReport(msgspec.Struct, frozen=True):
    """`slurm RUN_ID JOB_ID SOURCE STATE REASON EXIT STATUS_FILE STOP SETUP WHY`: how a run's job
    stands. `source` says who answered: squeue, sacct, none (nobody knows the job; `reason`
    says why) or missing (no run directory, or a run never submitted)."""

    run_id: str
    job_id: str | None
    source: str
    state: str  # Slurm's state name (PENDING, RUNNING, TIMEOUT, CANCELLED ...), or "-"
    reason: str  # squeue's %r, sacct's Reason, or why neither knows the job
    exit_code: int | None  # sacct's ExitCode before the colon
    signal: int | None  # ...and after it
    status_file: int | None  # the run's own exit status
    stop_requested: bool = False  # rtrain's stop asked the run to end
    setup_failed: bool = False  # the run's setup step failed; its trainer never started
    why: str | None = None  # why a workload with a non-zero status failed (as status.sh says)


JOB_SOURCES = ("squeue", "sacct", "none", "missing")


def job_report(values: list[str]) -> JobReport | None:
    """One `slurm` line's values; None for a line that is not one."""
    if len(values) < 7 or values[2] not in JOB_SOURCES:
        return None
    run_id, job_id, source, state, reason, exit_field, status_field = values[:7]
    code, _, sig = exit_field.partition(":")
    return JobReport(
        run_id=run_id,
        job_id=job_id if job_id.isdigit() else None,
        source=source,
        state=state,
        reason="" if reason == "-" else reason,
        exit_code=as_int(code) if exit_field != "-" else None,
        signal=as_int(sig) if exit_field != "-" else None,
        status_file=as_int(status_field),
        stop_requested=len(values) > 7 and values[7] == "1",
        setup_failed=len(values) > 8 and values[8] == "1",
        why=values[9] if len(values) > 9 and values[9] not in ("", "-") else None,
    )


class JobPoll(Answer, frozen=True, kw_only=True):
    jobs: dict[str, JobReport]


async def slurm_poll(transport: Transport, workdir: str, run_ids: Sequence[str]) -> JobPoll:
    """slurm_poll.sh: one squeue (and at most one sacct) for every run asked about."""
    done = await transport.run("launchers.slurm:slurm_poll", [workdir, *run_ids], timeout=60)
    reports = [job_report(values) for values in Lines(done.stdout).rows("slurm")]
    return JobPoll(
        jobs={r.run_id: r for r in reports if r is not None},
        exit=done.returncode,
        error_text=done.error_text,
    )


class JobCancelled(Answer, frozen=True, kw_only=True):
    """slurm_cancel.sh: the job's last state as Slurm says it (`state`), or "" when the
    script did not get as far; `over` once Slurm says the job has ended."""

    state: str
    over: bool
    error: FarError | None


async def slurm_cancel(
    transport: Transport, run_dir: str, run_id: str, grace: float
) -> JobCancelled:
    done = await transport.run(
        "launchers.slurm:slurm_cancel", [run_dir, run_id, str(round(grace))], timeout=grace + 120
    )
    lines = Lines(done.stdout)
    return JobCancelled(
        state=lines.value("stop") or "",
        over=done.returncode == Exit.OK and "stop" in lines,
        error=lines.error(),
        exit=done.returncode,
        error_text=done.error_text,
    )


class ClusterRows(Answer, frozen=True, kw_only=True):
    """slurm_preflight.sh's lines by key, for cluster_report.py to read."""

    rows: dict[str, list[list[str]]]


async def slurm_preflight(transport: Transport, workdir: str, partition: str | None) -> ClusterRows:
    args = [workdir, partition] if partition else [workdir]
    done = await transport.run("launchers.slurm:slurm_preflight", args, timeout=60)
    lines = Lines(done.stdout)
    keys = ("tool", "node", "default_partition", "accounting", "limit", "workdir")
    return ClusterRows(
        rows={key: lines.rows(key) for key in keys},
        exit=done.returncode,
        error_text=done.error_text,
    )
