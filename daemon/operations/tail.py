"""run/tail: stream a run's log as `run/log` notifications, by byte offset, until it ends.

Each poll is one stateless `read_log` from an explicit offset, so a dropped connection, a
restarted master or a reattaching client can never lose or repeat a byte.
"""

from __future__ import annotations

import asyncio
import base64
import logging

from rtrain.daemon.remote import contract
from rtrain.daemon.ssh.failures import answer_may_be_lost
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import (
    LogChunk,
    Reconnecting,
    RunRef,
    TailParams,
    TailResult,
    Waiting,
)
from rtrain.protocol.run_states import is_live

from .context import Ops
from .notifier import Notifier
from .run_nodes import run_node
from .status import status as run_status
from .tail_nodes import tail_nodes

log = logging.getLogger(__name__)
MAX_CHUNK = 1024 * 1024
FAST, SLOW = 0.2, 1.0
# How long the host may stay unreachable before a tail gives up.
RECONNECT_FOR = 120.0


async def tail(ops: Ops, p: TailParams, ctx: Notifier) -> TailResult:
    run_dir = ops.run_dir(p.host, p.run_id, p.workdir)
    # A run across hosts: every node's lines, or with `node` that node's log alone.
    known = ops.known(p.host, p.run_id)
    if p.node is None and known is not None and known.nodes:
        return await tail_nodes(ops, p, ctx, known.nodes)
    log_host = p.host
    if p.node is not None:
        node = run_node(ops, p.host, p.run_id, p.node)
        log_host, run_dir = node.host, node.remote_dir
    offset = max(0, p.offset) if p.lines is None else await _lines_back(ops, p, run_dir, log_host)
    inode = "-"
    delay = FAST
    held_at = -1  # where an incomplete character was last held back
    unreachable_since: float | None = None
    attempts = 0  # reconnection attempts since the host last answered
    loop = asyncio.get_running_loop()
    # A scheduler's job does not run on the host rtrain reaches: read_log cannot see it run.
    # Its state is the registry's, which the monitor keeps fresh (one squeue per poll).
    # A run across hosts: read_log sees one node; the run's state is every node's.
    launcher = ops.launcher_of(known) if known is not None else ops.launcher(p.host)
    scheduled = launcher.states_from_status
    told = ""  # the waiting reason last told to the client
    if scheduled:
        await run_status(ops, RunRef(host=p.host, run_id=p.run_id, workdir=p.workdir))
    while True:
        try:
            transport = await ops.transport(log_host)
            piece = await contract.read_log(transport, run_dir, p.run_id, offset, MAX_CHUNK, inode)
            unreachable_since = None
        except RpcError as error:
            # Without follow, the answer is wanted now: fail as fast as status does.
            if not answer_may_be_lost(error) or not p.follow:
                raise
            unreachable_since = unreachable_since or loop.time()
            if loop.time() - unreachable_since > RECONNECT_FOR:
                raise
            log.info("tail %s/%s: %s; retrying", p.host, p.run_id, error.message)
            attempts += 1
            ctx.notify(
                "run/reconnecting",
                Reconnecting(host=p.host, run_id=p.run_id, attempt=attempts, reason=error.message),
            )
            await asyncio.sleep(2)
            continue
        attempts = 0
        if not piece.ok:
            if piece.missing:
                raise app_error(Kind.RUN_NOT_FOUND, f"no run {p.run_id} on {p.host}.")
            raise app_error(
                Kind.REMOTE_FAILED, f"{p.host}: reading the log failed: {piece.error_text}"
            )
        inode = piece.inode
        start_offset = piece.start
        rotated = start_offset == 0 and offset > 0
        data = piece.data
        state = piece.state
        if scheduled:
            known = ops.known(p.host, p.run_id)
            state = known.state if known is not None else "unknown"
            if state == "queued" and known is not None and p.follow:
                reason = known.reason or "waiting in the queue"
                if reason != told:
                    told = reason
                    ctx.notify("run/waiting", Waiting(host=p.host, run_id=p.run_id, reason=reason))
        running = is_live(state)  # a queued run's log is still to come
        keep = len(data)
        more_waiting = start_offset + len(data) < piece.size
        if (running and p.follow or more_waiting) and keep:
            # Partial lines go out at once (a progress bar redraws with `\r` and no newline);
            # only a character cut off by the end waits, once, for its last bytes.
            whole = _whole_characters(data)
            if whole < keep and held_at != start_offset + whole:
                keep, held_at = whole, start_offset + whole
        if keep or rotated:
            ctx.notify("run/log", log_chunk(p.host, p.run_id, start_offset, data[:keep], rotated))
            if log_host == p.host:  # node 0's log is the run's, for its metrics
                ops.metrics.feed(p.host, p.run_id, "log", start_offset, data[:keep], rotated)
        offset = start_offset + keep
        if len(data) >= MAX_CHUNK:
            continue  # more is waiting: read on at once
        if not running and not data:
            break  # ended and drained
        if not p.follow and not keep:
            break
        delay = FAST if keep else min(delay * 1.5, SLOW)
        await asyncio.sleep(0 if not running else delay)
    final = (await run_status(ops, RunRef(host=p.host, run_id=p.run_id, workdir=p.workdir))).run
    return TailResult(run=final, offset=offset)


def log_chunk(host: str, run_id: str, offset: int, data: bytes, rotated: bool) -> LogChunk:
    """`data` as a `run/log` chunk: as text when it is valid UTF-8; otherwise its exact bytes
    in `base64` beside a display text with U+FFFD where bytes are not UTF-8."""
    try:
        return LogChunk(host, run_id, offset, offset + len(data), data.decode(), rotated)
    except UnicodeDecodeError:
        return LogChunk(
            host,
            run_id,
            offset,
            offset + len(data),
            data.decode(errors="replace"),
            rotated,
            base64=base64.b64encode(data).decode(),
        )


async def _lines_back(ops: Ops, p: TailParams, run_dir: str, log_host: str) -> int:
    """The offset where the log's last `p.lines` lines begin, so a reattach to a big log
    does not replay all of it."""
    assert p.lines is not None
    transport = await ops.transport(log_host)
    found = await contract.log_lines(transport, run_dir, p.run_id, p.lines)
    if found.offset is None:
        if found.exit == contract.Exit.NOT_FOUND:
            raise app_error(Kind.RUN_NOT_FOUND, f"no run {p.run_id} on {p.host}.")
        raise app_error(Kind.REMOTE_FAILED, f"{p.host}: reading the log failed: {found.error_text}")
    return found.offset


def _whole_characters(data: bytes) -> int:
    """How many bytes of `data` hold whole UTF-8 characters: all of it, or all but the start
    of a character its end cut off."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:
            continue  # a continuation byte: the character began further back
        length = (
            2 if 0xC0 <= byte < 0xE0 else 3 if 0xE0 <= byte < 0xF0 else 4 if byte >= 0xF0 else 1
        )
        return len(data) - back if length > back else len(data)
    return len(data)
