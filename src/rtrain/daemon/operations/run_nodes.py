"""Where one node of a run across hosts keeps its run (`tail --node`, `fetch --node`)."""

from __future__ import annotations

import posixpath

from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import RunNode

from .context import DaemonState


def run_node(ops: DaemonState, host: str, run_id: str, node: int) -> RunNode:
    """Node `node` of the run recorded under `host`; one sentence when there is none."""
    known = ops.known(host, run_id)
    nodes = known.nodes if known is not None else []
    if not nodes:
        if node == 0:
            return RunNode(host=host, remote_dir=ops.run_dir(host, run_id, None))
        raise app_error(
            Kind.INVALID_COMMAND,
            f"{run_id} on {host} runs on one host: it has no node {node} (--node is for a "
            "run across hosts).",
        )
    if node >= len(nodes):
        raise app_error(
            Kind.INVALID_COMMAND,
            f"{run_id} runs on {len(nodes)} nodes (0 to {len(nodes) - 1}); "
            f"there is no node {node}.",
        )
    return nodes[node]


def node_workdir(node: RunNode) -> str:
    return posixpath.dirname(node.remote_dir)
