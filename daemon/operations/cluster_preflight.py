"""host/preflight on a Slurm login node: what the partition offers, in findings and reasons."""

from __future__ import annotations

from rtrain.daemon.launchers.slurm import SlurmLauncher
from rtrain.daemon.remote import contract
from rtrain.daemon.slurm import cluster_report
from rtrain.daemon.ssh.transport import Transport
from rtrain.protocol.messages import PartitionInfo, PreflightParams, SlurmFindings

from .context import Ops


async def cluster_findings(
    ops: Ops, launcher: SlurmLauncher, transport: Transport, p: PreflightParams, workdir: str
) -> tuple[SlurmFindings, list[str]]:
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
    findings = SlurmFindings(
        partition=name,
        partition_up=chosen.up if chosen else False,
        gpus=chosen.most_gpus_on_a_node if chosen else 0,
        free_gpus=chosen.free_gpus if chosen else 0,
        accounting=report.accounting,
        accounting_error=report.accounting_error,
        limits=[line for line in limits if line],
        partitions=partitions,
    )
    return findings, reasons
