"""host/preflight for a Slurm launcher: what the partition offers, in findings and reasons.

A run goes to the partition's nodes, not to the login node preflight reaches, so the partition
leads the verdict.
"""

from __future__ import annotations

from collections import Counter

from rtrain.daemon.launchers.launcher import SchedulerVerdict
from rtrain.daemon.launchers.slurm import cluster_report
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol.messages import Finding, PartitionInfo, PreflightParams, SlurmFindings

from .contract import slurm_preflight


def partition_text(part: cluster_report.PartitionInfo, nodes: list[cluster_report.NodeGpus]) -> str:
    """`partition gpu (the default): up, 1 node (idle), 2 of 2 GPUs free now`."""
    states = Counter(node.state for node in nodes if node.partition == part.name)
    shown = ", ".join(
        state if len(states) == 1 and count == 1 else f"{count} {state}"
        for state, count in sorted(states.items())
    )
    text = f"partition {part.name}{' (the default)' if part.default else ''}: "
    text += "up" if part.up else "down"
    text += f", {part.nodes} node{'' if part.nodes == 1 else 's'}"
    if shown:
        text += f" ({shown})"
    if part.gpus:
        text += f", {part.free_gpus} of {part.gpus} GPUs free now"
        if part.nodes > 1:
            text += f", at most {part.most_gpus_on_a_node} on a node"
    else:
        text += ", no GPUs (gres/gpu)"
    return text


async def partition_findings(
    transport: Transport, p: PreflightParams, workdir: str, partition: str | None
) -> SchedulerVerdict:
    """The partition's findings, and why a run of `p.gpus` GPUs could not be submitted;
    `partition`: the one asked for, else the cluster's default."""
    answer = await slurm_preflight(transport, workdir, None)
    report = cluster_report.parse(answer.rows)
    reasons = cluster_report.reasons(report, partition, p.gpus)
    partitions = [
        PartitionInfo(
            name=part.name,
            up=part.up,
            nodes=part.nodes,
            gpus=part.gpus,
            free_gpus=part.free_gpus,
            default=part.default,
        )
        for part in report.partitions
    ]
    name = partition or report.default_partition
    chosen = next((part for part in report.partitions if part.name == name), None)
    slurm = SlurmFindings(
        partition=name,
        partition_up=chosen.up if chosen else False,
        gpus=chosen.most_gpus_on_a_node if chosen else 0,
        free_gpus=chosen.free_gpus if chosen else 0,
        accounting=report.accounting,
        accounting_error=report.accounting_error,
        limits=[line for line in _limit_lines(report) if line],
        partitions=partitions,
    )
    return SchedulerVerdict(
        topic="slurm",
        reasons=reasons,
        findings=_rows(report, chosen, slurm),
        partitions=partitions,
        result_fields={"slurm": slurm},
    )


def _limit_lines(report: cluster_report.ClusterReport) -> list[str]:
    """The user's association limits, one `label=value ...` line each (empty when none set)."""
    return [
        " ".join(
            f"{label}={value}"
            for label, value in (
                ("partition", limit.partition),
                ("GrpTRES", limit.grp_tres),
                ("MaxTRES", limit.max_tres),
                ("MaxJobs", limit.max_jobs),
                ("QOS", limit.qos),
            )
            if value
        )
        for limit in report.limits
    ]


def _rows(
    report: cluster_report.ClusterReport,
    chosen: cluster_report.PartitionInfo | None,
    slurm: SlurmFindings,
) -> list[Finding]:
    """What the partition offers, one line each, for the top of the verdict."""
    rows: list[Finding] = []
    if chosen is not None:
        rows.append(Finding("slurm", partition_text(chosen, report.nodes)))
    others = [part for part in report.partitions if part is not chosen]
    if others and not report.missing_tools:
        rows.append(
            Finding(
                "slurm",
                "other partitions: "
                + ", ".join(f"{o.name} {o.free_gpus}/{o.gpus} GPUs free" for o in others),
                "info",
            )
        )
    if report.accounting:
        rows.append(Finding("slurm", "accounting answers (sacct)"))
    elif not report.missing_tools:
        rows.append(
            Finding(
                "slurm",
                f"accounting does not answer ({report.accounting_error}): without it, a run "
                "whose job has left the queue may show as unknown",
                "warning",
            )
        )
    rows += [Finding("slurm", f"your limits: {line}", "info") for line in slurm.limits]
    return rows
