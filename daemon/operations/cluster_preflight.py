"""host/preflight on a Slurm login node: what the partition offers, in findings and reasons.

A run goes to the partition's nodes, not to the login node preflight reaches: the partition
leads the verdict, and what preflight sees of the login node itself (its python, its GPUs)
is labelled as the login node's.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from rtrain.daemon.launchers.slurm import SlurmLauncher
from rtrain.daemon.remote import contract
from rtrain.daemon.slurm import cluster_report
from rtrain.daemon.ssh.transport import Transport
from rtrain.protocol.messages import Finding, PartitionInfo, PreflightParams, SlurmFindings

from .context import Ops

LOGIN_NODE = "login node"


@dataclass
class ClusterVerdict:
    slurm: SlurmFindings
    # Why a run of the asked GPUs could not be submitted.
    reasons: list[str] = field(default_factory=list)
    # What the partition offers, one line each, for the top of the verdict.
    findings: list[Finding] = field(default_factory=list)


def login_node(findings: list[Finding]) -> list[Finding]:
    """The login node's own findings, labelled as such. A job runs on the partition's nodes,
    so the login node's GPUs being in use is no warning about the run's."""
    return [
        Finding(
            f"{finding.topic} ({LOGIN_NODE})",
            finding.text,
            "info" if finding.topic == "gpu" and finding.level == "warning" else finding.level,
        )
        for finding in findings
    ]


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


async def cluster_findings(
    ops: Ops, launcher: SlurmLauncher, transport: Transport, p: PreflightParams, workdir: str
) -> ClusterVerdict:
    """The partition's findings, and why a run of `p.gpus` GPUs could not be submitted."""
    partition = p.partition or launcher.defaults.partition
    answer = await contract.slurm_preflight(transport, workdir, None)
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
    ops.hosts.partitions[p.host] = partitions
    name = partition or report.default_partition
    chosen = next((part for part in report.partitions if part.name == name), None)
    limits = [
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
    slurm = SlurmFindings(
        partition=name,
        partition_up=chosen.up if chosen else False,
        gpus=chosen.most_gpus_on_a_node if chosen else 0,
        free_gpus=chosen.free_gpus if chosen else 0,
        accounting=report.accounting,
        accounting_error=report.accounting_error,
        limits=[line for line in limits if line],
        partitions=partitions,
    )
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
    return ClusterVerdict(slurm, reasons, rows)
