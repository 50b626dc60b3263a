"""What a Slurm login node offers, from slurm_preflight.sh's lines: sans-IO.

Free GPUs are counted per node from sinfo's Gres and GresUsed, over nodes that can take
jobs; Slurm, not rtrain, decides who gets them.
"""

from __future__ import annotations

import re

import msgspec

NEEDED_TOOLS = ("sbatch", "squeue", "sinfo", "scancel")
# Node states in which a node takes no new jobs.
UNAVAILABLE = (
    "down",
    "drain",
    "drained",
    "draining",
    "fail",
    "failing",
    "future",
    "maint",
    "reboot",
    "power",
    "not_responding",
    "unknown",
)
_GPU = re.compile(r"(?:^|,)gpu(?::([A-Za-z0-9_.-]+))?:(\d+)")


class NodeGpus(msgspec.Struct, frozen=True):
    partition: str
    host: str
    available: bool
    state: str
    total: int
    used: int


class PartitionInfo(msgspec.Struct, frozen=True):
    name: str
    up: bool
    nodes: int
    gpus: int
    free_gpus: int
    most_gpus_on_a_node: int
    default: bool = False


class Limit(msgspec.Struct, frozen=True):
    partition: str | None
    grp_tres: str | None
    max_tres: str | None
    max_jobs: str | None
    qos: str | None


class ClusterReport(msgspec.Struct, frozen=True):
    missing_tools: list[str]
    partitions: list[PartitionInfo]
    accounting: bool
    accounting_error: str | None
    limits: list[Limit]
    default_partition: str | None
    # Every node of every partition, as sinfo listed them (a node may be in several).
    nodes: list[NodeGpus] = []


def gpu_count(gres: str) -> int:
    """`gpu:2`, `gpu:a100:4(S:0-1)`, `gpu:1(IDX:0),shard:2` -> the number of GPUs."""
    return sum(int(match.group(2)) for match in _GPU.finditer(gres.replace("gres/", "")))


def parse(rows: dict[str, list[list[str]]]) -> ClusterReport:
    """The script's rows, by key, into one report."""
    missing = [r[0] for r in rows.get("tool", []) if len(r) > 1 and r[1] != "1"]
    default = next((r[0] for r in rows.get("default_partition", []) if r), None)
    nodes = [
        NodeGpus(
            partition=r[0].rstrip("*"),
            host=r[1],
            available=r[2] == "up",
            state=r[3].lower(),
            total=gpu_count(r[4]),
            used=gpu_count(r[5]),
        )
        for r in rows.get("node", [])
        if len(r) >= 6
    ]
    by_name: dict[str, list[NodeGpus]] = {}
    for node in nodes:
        by_name.setdefault(node.partition, []).append(node)
    partitions = [
        PartitionInfo(
            name=name,
            up=any(n.available for n in members),
            nodes=len(members),
            gpus=sum(n.total for n in members),
            free_gpus=sum(max(n.total - n.used, 0) for n in members if _takes_jobs(n)),
            most_gpus_on_a_node=max(n.total for n in members),
            default=name == default,
        )
        for name, members in by_name.items()
    ]
    accounting_rows = rows.get("accounting", [])
    accounting = bool(accounting_rows) and accounting_rows[0][0] == "1"
    accounting_error = None
    if not accounting:
        accounting_error = (
            accounting_rows[0][1]
            if accounting_rows and len(accounting_rows[0]) > 1
            else "sacct did not answer"
        )
    limits = [
        Limit(*(None if v in ("", "-") else v for v in (r + ["-"] * 5)[:5]))
        for r in rows.get("limit", [])
    ]
    return ClusterReport(
        missing_tools=missing,
        partitions=partitions,
        accounting=accounting,
        accounting_error=accounting_error,
        limits=limits,
        default_partition=default,
        nodes=nodes,
    )


def reasons(report: ClusterReport, partition: str | None, gpus: int) -> list[str]:
    """Why a run of `gpus` GPUs in `partition` (or the default one) cannot be submitted."""
    found: list[str] = []
    needed = [tool for tool in report.missing_tools if tool in NEEDED_TOOLS]
    if needed:
        found.append(
            f"{', '.join(needed)} not found on the login node's PATH (is this a Slurm login node?)"
        )
        return found
    name = partition or report.default_partition
    chosen = next((p for p in report.partitions if p.name == name), None)
    if chosen is None:
        known = ", ".join(p.name for p in report.partitions) or "none"
        if name is None:
            found.append(
                f"no partition given and the cluster has no default one (partitions: {known})"
            )
        else:
            found.append(f"partition {name} does not exist (partitions: {known})")
        return found
    if not chosen.up:
        found.append(f"partition {chosen.name} is down")
    if gpus > 0 and chosen.gpus == 0:
        found.append(f"partition {chosen.name} has no GPUs (gres/gpu) configured")
    elif gpus > chosen.most_gpus_on_a_node:
        # --gpus is per node (gres), so one node must hold them all.
        found.append(
            f"partition {chosen.name} has at most {chosen.most_gpus_on_a_node} GPU(s) on a node; "
            f"{gpus} asked"
        )
    return found


def _takes_jobs(node: NodeGpus) -> bool:
    return node.available and not any(word in node.state for word in UNAVAILABLE)
