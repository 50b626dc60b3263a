"""run/tail of a run across hosts without `node`: every node's log, line by line, each whole
line behind `[node K] `, until the run (every node) has ended and each log is drained.

The chunks' offsets count the merged stream this tail sent, not any one log's bytes: a tail
to resume at a byte offset names its node (`tail --node K --offset N`).
"""

from __future__ import annotations

import asyncio
import logging

from rtrain.daemon.remote.contract import run_scripts
from rtrain.daemon.ssh.failures import answer_may_be_lost
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import LogChunk, RunNode, RunRef, TailParams, TailResult
from rtrain.protocol.run_states import is_live

from .context import DaemonState
from .notifier import Notifier
from .status import status as run_status

log = logging.getLogger(__name__)
MAX_CHUNK = 256 * 1024
FAST, SLOW = 0.2, 1.0
RECONNECT_FOR = 120.0


class _NodeLog:
    """Where one node's log has been read to, and its last line while it is incomplete."""

    def __init__(self, index: int, node: RunNode, offset: int) -> None:
        self.index = index
        self.node = node
        self.offset = offset
        self.inode = "-"
        self.partial = b""

    def lines(self, data: bytes, final: bool) -> bytes:
        """`data`'s whole lines (all of it when `final`), each behind the node's prefix."""
        text = self.partial + data
        if final:
            whole, self.partial = text.removesuffix(b"\n"), b""
        else:
            whole, _, self.partial = text.rpartition(b"\n")
        if not whole:
            return b""
        prefix = f"[node {self.index}] ".encode()
        return b"".join(prefix + line + b"\n" for line in whole.split(b"\n"))


async def tail_nodes(
    ops: DaemonState, p: TailParams, ctx: Notifier, nodes: list[RunNode]
) -> TailResult:
    logs = [_NodeLog(i, node, 0) for i, node in enumerate(nodes)]
    if p.lines is not None:
        for node_log in logs:
            node_log.offset = await _lines_back(ops, p, node_log.node)
    sent = 0
    delay = FAST
    loop = asyncio.get_running_loop()
    unreachable_since: float | None = None
    while True:
        known = ops.known(p.host, p.run_id)
        running = known is not None and is_live(known.state)
        moved = False
        try:
            for node_log in logs:
                data = await _read(ops, p, node_log, not running)
                moved = moved or bool(data)
                if data:
                    ctx.notify("run/log", _chunk(p, sent, data))
                    sent += len(data)
            unreachable_since = None
        except RpcError as error:
            if not answer_may_be_lost(error) or not p.follow:
                raise
            unreachable_since = unreachable_since or loop.time()
            if loop.time() - unreachable_since > RECONNECT_FOR:
                raise
            log.info("tail %s/%s: %s; retrying", p.host, p.run_id, error.message)
            await asyncio.sleep(2)
            continue
        if not moved and (not running or not p.follow):
            break
        delay = FAST if moved else min(delay * 1.5, SLOW)
        await asyncio.sleep(delay)
    final = (await run_status(ops, RunRef(host=p.host, run_id=p.run_id, workdir=p.workdir))).run
    return TailResult(run=final, offset=logs[0].offset)


async def _read(ops: DaemonState, p: TailParams, node_log: _NodeLog, ended: bool) -> bytes:
    """The node's new whole lines, prefixed (its last line too once the run `ended`)."""
    transport = await ops.transport(node_log.node.host)
    piece = await run_scripts.read_log(
        transport, node_log.node.remote_dir, p.run_id, node_log.offset, MAX_CHUNK, node_log.inode
    )
    if not piece.ok:
        if piece.missing:
            raise app_error(
                Kind.RUN_NOT_FOUND,
                f"no run {p.run_id} on node {node_log.index} ({node_log.node.host}).",
            )
        raise app_error(
            Kind.REMOTE_FAILED,
            f"{node_log.node.host}: reading the log failed: {piece.error_text}",
        )
    if piece.start < node_log.offset:
        node_log.partial = b""  # the log was replaced: read anew
    node_log.inode = piece.inode
    node_log.offset = piece.start + len(piece.data)
    if node_log.index == 0:
        ops.metrics.feed(p.host, p.run_id, "log", piece.start, piece.data, False)
    drained = node_log.offset >= piece.size
    return node_log.lines(piece.data, final=ended and drained)


async def _lines_back(ops: DaemonState, p: TailParams, node: RunNode) -> int:
    assert p.lines is not None
    transport = await ops.transport(node.host)
    found = await run_scripts.log_lines(transport, node.remote_dir, p.run_id, p.lines)
    if found.offset is None:
        raise app_error(
            Kind.REMOTE_FAILED, f"{node.host}: reading the log failed: {found.error_text}"
        )
    return found.offset


def _chunk(p: TailParams, offset: int, data: bytes) -> LogChunk:
    return LogChunk(
        p.host, p.run_id, offset, offset + len(data), data.decode(errors="replace"), False
    )
