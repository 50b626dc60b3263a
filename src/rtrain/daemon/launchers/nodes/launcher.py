"""The `nodes` launcher: one run across several hosts reached by plain SSH, torchrun on each.

Every node holds its own run directory (same run id, its own copy of the inputs) and runs
the `{torchrun}` command as the torchrun launcher would on one host, with `--standalone`
swapped for torchrun's own c10d rendezvous: `--nnodes=N`, the endpoint on node 0 at a port
free there (free_port.sh) and an address the others reach (node 0's HostName as `ssh -G`
resolves it, or `--master-addr`), node 0 hosting the store (`is_host`). torchrun numbers the
nodes itself as they meet; rtrain names a node by its place in the host list.

The run is recorded under node 0's host. Its state is every node's state together: running
while every node runs, completed once all completed; once one node ends otherwise (failed,
lost, stopped by its limits) the others are taken down and the run ends as that node did,
naming it. A stop stops every node at once and says stopped only once each confirmed it; a
node that does not answer is named, and its stop is finished once it answers again.
"""

from __future__ import annotations

import asyncio
import math
import posixpath
import re
import time
from collections.abc import Sequence

import msgspec

from rtrain.daemon.launchers.over_transport import OverTransport
from rtrain.daemon.launchers.placement import Placement
from rtrain.daemon.remote.contract import answers, launch_scripts, run_scripts
from rtrain.daemon.remote.contract.launch_scripts import LaunchAhead, Launched
from rtrain.daemon.remote.contract.port_scripts import free_port
from rtrain.daemon.remote.contract.run_scripts import RunRow, StatusReport, StopReport
from rtrain.daemon.remote.error_words import ErrorWord, FarError
from rtrain.daemon.ssh.failures import host_did_not_answer
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import RunNode, StartParams
from rtrain.protocol.run_states import RunState, is_live, part_ending_rank

# What torchrun's `--standalone` becomes on a run across hosts (the words rtrain adds).
_RDZV_PREFIXES = ("--nnodes=", "--rdzv-backend=", "--rdzv-endpoint=", "--rdzv-id=", "--rdzv-conf=")
# Seconds a node still running gets after SIGTERM once another node ended the run.
TAKE_DOWN_GRACE = 5.0
# Seconds the other nodes of a run get to end by themselves once a node failed of a lost
# peer: the node that went first says why (its status comes a moment after its ranks).
PEER_WAIT = 30.0
# What a rank says when a peer on another node went first: gloo's closed or reset pair,
# NCCL's watchdog and "remote process exited", the c10d store's lost connection.
PEER_LOST = re.compile(
    r"Connection (?:closed|reset) by peer|remote process exited|ProcessGroupNCCL.*watchdog"
    r"|Watchdog caught collective|NCCL communicator was aborted|DistNetworkError"
    r"|DistStoreError|recvValue failed|Broken pipe|Socket Timeout|failed to recv, got 0 bytes"
    r"|Connection refused.*(?:store|TCPStore)|TCPStore.*(?:closed|reset|timed out)",
    re.IGNORECASE,
)


class NodesLauncher(OverTransport):
    name = "nodes"
    # Each node's torchrun agent gives its ranks 30 s after SIGTERM.
    default_grace = 35.0
    # watch.sh on node 0 sees node 0 alone: the run's state is every node's (status).
    states_from_status = True
    runs_torchrun = True
    across_hosts = True

    def __init__(self, where: Placement) -> None:
        super().__init__(where)
        self.nodes = list(where.nodes)
        self.master_addr = where.master_addr

    async def launch(
        self,
        run_dir: str,
        run_id: str,
        python: str,
        command: Sequence[str],
        secrets: bytes,
        params: StartParams | None = None,
        ahead: LaunchAhead | None = None,
    ) -> Launched:
        """`command` is node 0's (in `run_dir`, with `python`); every other node runs it with
        its own run directory and its own python (RunNode.python) in place of node 0's. A
        node that did not start takes the others down."""
        transport = await self.transport(self.nodes[0].host)
        port = await free_port(transport, python)
        if port.port is None:
            why = " ".join(port.error) or port.error_text
            return _not_launched(f"no free port for the rendezvous on {self.nodes[0].host}: {why}")
        address = self.master_addr or await self.where.resolve(self.nodes[0].host)
        plain = standalone(command)
        if "--standalone" not in plain:
            return _not_launched("a run across hosts runs {torchrun}; the command has none")
        transports = [transport, *[await self.connect(n.host) for n in self.nodes[1:]]]
        launches = [
            launch_scripts.launch(
                node_transport,
                node.remote_dir,
                run_id,
                node.python or python,
                rendezvous(
                    _moved(plain, run_dir, node.remote_dir, python, node.python or python),
                    len(self.nodes),
                    f"{address}:{port.port}",
                    run_id,
                    host=index == 0,
                ),
                secrets,
            )
            for index, (node, node_transport) in enumerate(zip(self.nodes, transports, strict=True))
        ]
        answers = await asyncio.gather(*launches, return_exceptions=True)
        failed = [
            (node, answer)
            for node, answer in zip(self.nodes, answers, strict=True)
            if isinstance(answer, BaseException) or answer.pid is None
        ]
        if not failed:
            first = answers[0]
            assert isinstance(first, Launched)
            return first
        # One node did not start: the ones that did would wait for it until the rendezvous
        # times out. Take them down now.
        await asyncio.gather(
            *(
                run_scripts.stop(t, n.remote_dir, run_id, TAKE_DOWN_GRACE, True)
                for n, t, a in zip(self.nodes, transports, answers, strict=True)
                if isinstance(a, Launched) and a.pid is not None
            ),
            return_exceptions=True,
        )
        node, answer = failed[0]
        if isinstance(answer, Launched) and answer.already_launched:
            return answer
        why = (
            answer.message
            if isinstance(answer, RpcError)
            else str(answer)
            if isinstance(answer, BaseException)
            else (answer.error.said if answer.error else "") or answer.error_text
        )
        return _not_launched(f"node {self.nodes.index(node)} ({node.host}): {why}")

    async def status(self, workdir: str, run_ids: Sequence[str]) -> StatusReport:
        """One row for the run (the launcher is one run's): its nodes' rows together."""
        transport = await self.transport(self.nodes[0].host)
        runs: dict[str, RunRow] = {}
        for run_id in run_ids:
            rows = await self._rows(transport, run_id)
            row = combined(run_id, self.nodes, rows)
            first = first_ended(rows)
            alive = [i for i, r in enumerate(rows) if is_live(r.state)]
            if first is not None and alive and _peer_went_moments_ago(rows[first]):
                # The node that went first is still ending (torchrun writes its status a
                # moment after its ranks): taken down now, it would read stopped, and the
                # run would blame the node that only lost it.
                runs[run_id] = RunRow(
                    run_id=run_id,
                    state="running",
                    started_at=rows[0].started_at,
                    detail=f"node {first} ({self.nodes[first].host}) lost a peer; waiting "
                    "for the node that failed first to end",
                    rank0_node=rank0_node(rows),
                )
                continue
            if first is not None and alive and rows[0].state != "missing":
                await self._take_down(transport, run_id, alive)
                rows = await self._rows(transport, run_id)
                row = combined(run_id, self.nodes, rows, ended_first=first)
            runs[run_id] = msgspec.structs.replace(row, rank0_node=rank0_node(rows))
        return StatusReport(runs=runs, exit=answers.Exit.OK, error_text="")

    async def stop(self, run_dir: str, run_id: str, grace: float, force: bool) -> StopReport:
        """Every node at once, each reached on its own (node 0 too): a node that does not
        answer keeps no other from stopping. Such nodes are the report's `pending` (outcome
        `pending`), with why in `reason`; the run is never said stopped while one of them
        may still train."""

        async def one(index: int) -> StopReport:
            node = self.nodes[index]
            reach = await self.transport(node.host)
            return await run_scripts.stop(reach, node.remote_dir, run_id, grace, force)

        got = await asyncio.gather(
            *(one(i) for i in range(len(self.nodes))), return_exceptions=True
        )
        silent: dict[int, RpcError] = {}
        reports: dict[int, StopReport] = {}
        for index, answer in enumerate(got):
            if isinstance(answer, RpcError) and host_did_not_answer(answer):
                silent[index] = answer
            elif isinstance(answer, BaseException):
                raise answer
            else:
                reports[index] = answer
        outcomes = [r.outcome for r in reports.values()]
        survivors = [pid for r in reports.values() for pid in r.survivors]
        killed = [pid for r in reports.values() for pid in r.killed]
        first = reports.get(0)
        if first is not None and first.outcome not in ("stopped", "not_running", "survived"):
            return first  # node 0 refused, or has no such run: the operation says so
        for index, report in reports.items():
            if report.outcome in ("refused", ""):
                reason = (
                    f"node {index} ({self.nodes[index].host}): {report.reason or report.error_text}"
                )
                return _stop_report(
                    "survived" if report.outcome else "", reason, survivors, killed, None, report
                )
        if "survived" in outcomes:
            index = next(i for i, r in reports.items() if r.outcome == "survived")
            reason = f"node {index} ({self.nodes[index].host}) still runs"
            return _stop_report("survived", reason, survivors, killed, None, reports[index])
        if silent:
            reason = "; ".join(
                f"node {i} ({self.nodes[i].host}) did not answer ({error.message})"
                for i, error in silent.items()
            )
            return StopReport(
                outcome="pending",
                reason=reason,
                survivors=[],
                killed=killed,
                run=None,
                pending=list(silent),
                exit=0,
                error_text="",
            )
        assert first is not None
        rows = [
            reports[i].run or RunRow(run_id=run_id, state="missing", detail="no answer")
            for i in range(len(self.nodes))
        ]
        row = combined(run_id, self.nodes, rows)
        if "stopped" in outcomes:
            # This stop ended the run: a node whose ranks failed as its peers went (a
            # collective's lost peer) failed of the stop.
            row = msgspec.structs.replace(
                row,
                state="stopped",
                exit_code=None,
                signal=None,
                detail=None,
                stopped_by=None,
                limit_seconds=None,
            )
        outcome = "stopped" if "stopped" in outcomes else "not_running"
        return _stop_report(outcome, None, [], killed, row, first)

    async def _transports(self, first: Transport) -> list[Transport]:
        return [first, *[await self.connect(n.host) for n in self.nodes[1:]]]

    async def _rows(self, transport: Transport, run_id: str) -> list[RunRow]:
        transports = await self._transports(transport)
        reports = await asyncio.gather(
            *(
                run_scripts.status(t, posixpath.dirname(node.remote_dir), [run_id])
                for node, t in zip(self.nodes, transports, strict=True)
            )
        )
        rows = []
        for node, report in zip(self.nodes, reports, strict=True):
            row = report.runs.get(run_id)
            if row is None:
                raise app_error(
                    Kind.REMOTE_FAILED, f"{node.host}: status failed: {report.error_text}"
                )
            rows.append(row)
        return rows

    async def _take_down(self, transport: Transport, run_id: str, alive: list[int]) -> None:
        transports = await self._transports(transport)
        await asyncio.gather(
            *(
                run_scripts.stop(
                    transports[i], self.nodes[i].remote_dir, run_id, TAKE_DOWN_GRACE, True
                )
                for i in alive
            )
        )


def combined(
    run_id: str, nodes: Sequence[RunNode], rows: Sequence[RunRow], ended_first: int | None = None
) -> RunRow:
    """The run's row from its nodes' rows (node 0 first). `ended_first`: the node whose end
    ended the run (the others were taken down after it)."""
    if rows[0].state == "missing":
        return rows[0]
    states = [r.state for r in rows]
    if all(s == "completed" for s in states):
        return rows[0]
    if ended_first is None:
        ended_first = first_ended(rows)
        if ended_first is None:
            waiting: RunState = "queued" if "queued" in states else "running"
            if "unknown" in states:
                waiting = "unknown"
            stalls = [r.stalled_for for r in rows]
            still = min(s for s in stalls if s is not None) if None not in stalls else None
            return RunRow(
                run_id=run_id,
                state=waiting,
                started_at=rows[0].started_at,
                detail=_named(nodes, rows, waiting),
                stalled_for=still,
            )
    why = rows[ended_first]
    state = "lost" if why.state == "missing" else why.state
    detail = why.detail or ("its run directory is gone" if why.state == "missing" else None)
    if why.stopped_by is None:
        # A limit's stop keeps its typed fields and words (the daemon reads which limit).
        where = f"node {ended_first} ({nodes[ended_first].host})"
        detail = f"{where}, {detail}" if detail else where
        also = [i for i, r in enumerate(rows) if i != ended_first and r.state == "failed"]
        if state == "failed" and also:
            detail += f"; node {', '.join(map(str, also))} failed too"
    return RunRow(
        run_id=run_id,
        state=state,
        exit_code=why.exit_code,
        signal=why.signal,
        started_at=rows[0].started_at,
        detail=detail,
        stopped_by=why.stopped_by,
        limit_seconds=why.limit_seconds,
        ending=why.ending,
    )


def rank0_node(rows: Sequence[RunRow]) -> int:
    """The node whose log holds global rank 0's lines: torchrun's c10d rendezvous numbers
    the nodes itself, so rank 0 may run on any of them (its relay says so); node 0 until one
    says."""
    return next((index for index, row in enumerate(rows) if row.rank0), 0)


def first_ended(rows: Sequence[RunRow]) -> int | None:
    """The node whose end says most of why the run ended (a missing run dir: lost), or None
    while no node ended but by completing. Among failed nodes, one whose ranks raised of
    their own comes before one whose ranks lost a peer in a collective (a consequence),
    then the one whose first failing rank failed first (the far side's time, not the order
    the answers came in), then the first in the host list."""
    ranked = [
        (rank, _peer_lost(r), r.failed_at if r.failed_at is not None else math.inf, i)
        for i, r in enumerate(rows)
        if (rank := part_ending_rank(r.state)) is not None
    ]
    return min(ranked, default=(None, None, None, None))[3]


def _peer_went_moments_ago(row: RunRow) -> bool:
    """`row` failed of a lost peer within PEER_WAIT seconds (by its host's clock)."""
    if not _peer_lost(row):
        return False
    return row.failed_at is None or time.time() - row.failed_at < PEER_WAIT


def _peer_lost(row: RunRow) -> bool:
    """The node failed because another went: its reason is a collective's or the c10d
    store's lost peer (gloo, NCCL, the store), not an exception of the trainer's own."""
    return row.state == "failed" and PEER_LOST.search(row.detail or "") is not None


def _named(nodes: Sequence[RunNode], rows: Sequence[RunRow], state: str) -> str | None:
    """Which nodes a run still waits on, or which already finished, in words."""
    done = [i for i, r in enumerate(rows) if r.state == "completed"]
    if state == "running" and done:
        return f"node {', '.join(map(str, done))} completed; waiting for the others"
    return rows[0].detail if rows[0].state == state else None


def standalone(command: Sequence[str]) -> list[str]:
    """`command` with the rendezvous words a launch added taken out again (`--standalone`
    back in their place): what a later attempt starts from, with a new port."""
    words: list[str] = []
    for word in command:
        if word.startswith(_RDZV_PREFIXES):
            if "--standalone" not in words:
                words.append("--standalone")
            continue
        words.append(word)
    return words


def rendezvous(
    command: Sequence[str], nodes: int, endpoint: str, run_id: str, host: bool
) -> list[str]:
    """torchrun's `--standalone` in `command` swapped for the c10d rendezvous of `nodes`."""
    at = list(command).index("--standalone")
    words = [
        f"--nnodes={nodes}",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint={endpoint}",
        f"--rdzv-id={run_id}",
        f"--rdzv-conf=is_host={1 if host else 0}",
    ]
    return [*command[:at], *words, *command[at + 1 :]]


def _moved(
    command: Sequence[str], run_dir: str, node_dir: str, python: str, node_python: str
) -> list[str]:
    """Node 0's `command` for a node whose run dir is `node_dir` and whose python is
    `node_python`: node 0's work directory (and so its run dir) in any word becomes that
    node's (homes differ between hosts), and each word that is node 0's python (the relay's,
    torchrun's) that node's own."""
    here, there = posixpath.dirname(run_dir), posixpath.dirname(node_dir)
    return [node_python if word == python else word.replace(here, there) for word in command]


def _not_launched(why: str) -> Launched:
    return Launched(
        pid=None,
        started_at=None,
        error=FarError(word=ErrorWord.OTHER, said=why),
        already_launched=False,
        exit=1,
        error_text=why,
    )


def _stop_report(
    outcome: str,
    reason: str | None,
    survivors: list[int],
    killed: list[int],
    run: RunRow | None,
    answer: answers.Answer,
) -> StopReport:
    return StopReport(
        outcome=outcome,
        reason=reason,
        survivors=survivors,
        killed=killed,
        run=run,
        exit=answer.exit,
        error_text=answer.error_text,
    )
