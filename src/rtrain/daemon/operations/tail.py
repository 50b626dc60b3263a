"""run/tail: stream a run's log as `run/log` notifications, by byte offset, until it ends.

Each poll is one stateless `read_log` from an explicit offset, so a dropped connection, a
restarted master or a reattaching client can never lose or repeat a byte.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from dataclasses import dataclass

from rtrain.daemon.remote.contract import answers, run_scripts
from rtrain.daemon.ssh.failures import answer_may_be_lost
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import (
    LogChunk,
    Reconnecting,
    RunRef,
    RunState,
    TailParams,
    TailResult,
    Waiting,
)
from rtrain.protocol.run_states import is_live

from .context import DaemonState
from .notifier import Notifier
from .run_nodes import run_node
from .status import status as run_status
from .tail_nodes import tail_nodes

log = logging.getLogger(__name__)
MAX_CHUNK = 1024 * 1024
FAST, SLOW = 0.2, 1.0
# How long the host may stay unreachable before a tail gives up.
RECONNECT_FOR = 120.0


async def tail(ops: DaemonState, p: TailParams, ctx: Notifier) -> TailResult:
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
    # A scheduler's job does not run on the host rtrain reaches: read_log cannot see it run.
    # Its state is the registry's, which the monitor keeps fresh (one squeue per poll).
    # A run across hosts: read_log sees one node; the run's state is every node's.
    launcher = ops.launcher_of(known) if known is not None else ops.launcher(p.host)
    tailing = _Tailing(ops, p, ctx, log_host, run_dir, launcher.states_from_status, offset)
    if tailing.scheduled:
        await run_status(ops, RunRef(host=p.host, run_id=p.run_id, workdir=p.workdir))
    await tailing.run()
    final = (await run_status(ops, RunRef(host=p.host, run_id=p.run_id, workdir=p.workdir))).run
    return TailResult(run=final, offset=tailing.offset)


@dataclass
class _Tailing:
    """One tail of one log: where it has read to, and what it has told the client."""

    ops: DaemonState
    p: TailParams
    ctx: Notifier
    log_host: str
    run_dir: str
    # Whether the run's state is the registry's (a scheduler's job, a run across hosts).
    scheduled: bool
    offset: int
    inode: str = "-"
    delay: float = FAST
    held_at: int = -1  # where an incomplete character was last held back
    unreachable_since: float | None = None
    attempts: int = 0  # reconnection attempts since the host last answered
    told: str = ""  # the waiting reason last told to the client

    async def run(self) -> None:
        """Read and send until the run has ended and its log is drained (or, without follow,
        until nothing more is there)."""
        while True:
            piece = await self._read()
            if piece is None:
                continue
            running = is_live(self._state(piece))  # a queued run's log is still to come
            keep = self._send(piece, running)
            if len(piece.data) >= MAX_CHUNK:
                continue  # more is waiting: read on at once
            if not running and not piece.data:
                return  # ended and drained
            if not self.p.follow and not keep:
                return
            self.delay = FAST if keep else min(self.delay * 1.5, SLOW)
            await asyncio.sleep(0 if not running else self.delay)

    async def _read(self) -> run_scripts.LogSlice | None:
        """The log from `offset` on; None after a failed try that is worth another."""
        p, loop = self.p, asyncio.get_running_loop()
        try:
            transport = await self.ops.transport(self.log_host)
            piece = await run_scripts.read_log(
                transport, self.run_dir, p.run_id, self.offset, MAX_CHUNK, self.inode
            )
            self.unreachable_since = None
        except RpcError as error:
            # Without follow, the answer is wanted now: fail as fast as status does.
            if not answer_may_be_lost(error) or not p.follow:
                raise
            self.unreachable_since = self.unreachable_since or loop.time()
            if loop.time() - self.unreachable_since > RECONNECT_FOR:
                raise
            log.info("tail %s/%s: %s; retrying", p.host, p.run_id, error.message)
            self.attempts += 1
            self.ctx.notify(
                "run/reconnecting",
                Reconnecting(
                    host=p.host, run_id=p.run_id, attempt=self.attempts, reason=error.message
                ),
            )
            await asyncio.sleep(2)
            return None
        self.attempts = 0
        if not piece.ok:
            if piece.missing:
                raise app_error(Kind.RUN_NOT_FOUND, f"no run {p.run_id} on {p.host}.")
            raise app_error(
                Kind.REMOTE_FAILED, f"{p.host}: reading the log failed: {piece.error_text}"
            )
        self.inode = piece.inode
        return piece

    def _state(self, piece: run_scripts.LogSlice) -> RunState:
        """How the run stands; a queued job's reason is told once each time it changes."""
        if not self.scheduled:
            return piece.state
        p = self.p
        known = self.ops.known(p.host, p.run_id)
        state = known.state if known is not None else "unknown"
        if state == "queued" and known is not None and p.follow:
            reason = known.reason or "waiting in the queue"
            if reason != self.told:
                self.told = reason
                self.ctx.notify("run/waiting", Waiting(host=p.host, run_id=p.run_id, reason=reason))
        return state

    def _send(self, piece: run_scripts.LogSlice, running: bool) -> int:
        """Send what of `piece` can go now; the bytes sent."""
        p = self.p
        start_offset = piece.start
        rotated = start_offset == 0 and self.offset > 0
        data = piece.data
        keep = len(data)
        more_waiting = start_offset + len(data) < piece.size
        if (running and p.follow or more_waiting) and keep:
            # Partial lines go out at once (a progress bar redraws with `\r` and no newline);
            # only a character cut off by the end waits, once, for its last bytes.
            whole = _whole_characters(data)
            if whole < keep and self.held_at != start_offset + whole:
                keep, self.held_at = whole, start_offset + whole
        if keep or rotated:
            self.ctx.notify(
                "run/log", log_chunk(p.host, p.run_id, start_offset, data[:keep], rotated)
            )
            if self.log_host == p.host:  # node 0's log is the run's, for its metrics
                self.ops.metrics.feed(p.host, p.run_id, "log", start_offset, data[:keep], rotated)
        self.offset = start_offset + keep
        return keep


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


async def _lines_back(ops: DaemonState, p: TailParams, run_dir: str, log_host: str) -> int:
    """The offset where the log's last `p.lines` lines begin, so a reattach to a big log
    does not replay all of it."""
    assert p.lines is not None
    transport = await ops.transport(log_host)
    found = await run_scripts.log_lines(transport, run_dir, p.run_id, p.lines)
    if found.offset is None:
        if found.exit == answers.Exit.NOT_FOUND:
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
