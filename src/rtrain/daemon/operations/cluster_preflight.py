"""host/preflight on a Slurm login node: the login node's own findings, labelled as such.

A run goes to the partition's nodes, not to the login node preflight reaches: the partition
leads the verdict (the launcher's own findings, daemon/launchers/slurm_preflight.py), and what
preflight sees of the login node itself (its python, its GPUs) is labelled as the login node's.
"""

from __future__ import annotations

from rtrain.protocol.messages import Finding

LOGIN_NODE = "login node"


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
