"""The monitor's poll of one host: the runs' states, their new log bytes, the host's GPUs.

One watch.sh per workdir of the host's active runs (nearly always one), GPUs asked in the
first only, so a poll is still one remote command per host. Every read tells the metrics
store whether it was the run's last (docs/metrics.md, "When the daemon reads").
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from dataclasses import dataclass

from rtrain.daemon.metrics.gpu_telemetry import gpu_stats
from rtrain.daemon.metrics.planned_length import planned_length
from rtrain.daemon.remote.contract import answers, run_scripts
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import DEFAULT_WORKDIR, GpuSample, RunInfo
from rtrain.protocol.run_states import is_ended

from .context import DaemonState, launcher_group, now
from .run_state import apply_row

# The most bytes of one file a poll brings; when more are new, the newest of them.
MAX_SLICE = 256 * 1024


async def watch_host(
    ops: DaemonState, host: str, runs: list[RunInfo], max_slice: int = MAX_SLICE, gpus: bool = True
) -> tuple[list[RunInfo | None], set[str]]:
    """Each run as the host says it stands (None: gone), and the run ids whose metrics moved."""
    transport = await ops.transport(host)
    found: dict[str, run_scripts.RunRow] = {}
    moved: set[str] = set()
    from_status: set[str] = set()  # runs whose state was read after their files
    sampled = False  # the host's GPUs, asked once a poll
    for (workdir, _, _), members in _groups(ops, host, runs).items():
        first = members[0] if members else None
        launcher = ops.launcher_of(first) if first else ops.launcher(host)
        # A cluster's login node has no GPUs of its jobs to sample.
        sample = launcher.runs_on_host and gpus and not sampled
        sampled = sampled or sample
        if launcher.across_hosts and members:
            # Its state first (every node's): it says on which node global rank 0 ran, whose
            # log then holds the run's metrics; and a run seen ended has sent its last bytes.
            report = await launcher.status(workdir, [r.run_id for r in members])
            if report.exit != answers.Exit.OK and not report.runs:
                raise app_error(Kind.REMOTE_FAILED, f"{host}: status failed: {report.error_text}")
            found.update(report.runs)
            poll = _Poll(host, workdir, sample, max_slice)
            moved |= await _read_where_rank0_ran(ops, poll, members, report.runs)
            continue
        asked = _asked(ops, host, members)
        triples = _triples(members, asked)
        out = await run_scripts.watch(transport, workdir, sample, max_slice, triples)
        if not launcher.states_from_status:
            if out.exit != answers.Exit.OK and not out.runs:
                raise app_error(Kind.REMOTE_FAILED, f"{host}: status failed: {out.error_text}")
            found.update(out.runs)
        elif members:
            # A cluster's jobs run on other nodes: watch.sh brings their logs (the run dir is
            # shared), their states are the scheduler's (one squeue for all of them). A run
            # across hosts: node 0's log, every node's state.
            from_status.update(r.run_id for r in members)
            report = await launcher.status(workdir, [r.run_id for r in members])
            if report.exit != answers.Exit.OK and not report.runs:
                raise app_error(Kind.REMOTE_FAILED, f"{host}: status failed: {report.error_text}")
            found.update(report.runs)
        moved |= _take_output(ops, host, out, asked)
    fresh = [apply_row(run, found[run.run_id]) if run.run_id in found else None for run in runs]
    _mark_reads(ops, host, runs, fresh, from_status)
    return fresh, moved


def _triples(runs: list[RunInfo], asked: dict[tuple[str, str], int]) -> list[tuple[str, int, int]]:
    """What watch.sh takes for each run: its id and where reading its two files stands."""
    return [(r.run_id, asked[(r.run_id, "log")], asked[(r.run_id, "jsonl")]) for r in runs]


@dataclass(frozen=True)
class _Poll:
    """What one poll of a group asks: the host the runs are recorded under, their work
    directory there, whether it samples the host's GPUs, the most bytes of a file it brings."""

    host: str
    workdir: str
    sample: bool
    max_slice: int


async def _read_where_rank0_ran(
    ops: DaemonState, poll: _Poll, runs: list[RunInfo], rows: dict[str, run_scripts.RunRow]
) -> set[str]:
    """Runs across hosts: each run's files read on the node where its global rank 0 ran (the
    one that prints, for most trainers), one watch.sh per node's host and workdir; the GPUs
    are node 0's host's. The run ids whose metrics moved."""
    host, workdir, sample = poll.host, poll.workdir, poll.sample
    places: dict[tuple[str, str], list[RunInfo]] = defaultdict(list)
    for run in runs:
        row = rows.get(run.run_id)
        node = row.rank0_node if row is not None and row.rank0_node < len(run.nodes) else 0
        ops.metrics.read_from(host, run.run_id, node)
        where = (
            (run.nodes[node].host, posixpath.dirname(run.nodes[node].remote_dir))
            if node
            else (host, workdir)
        )
        places[where].append(run)
    if sample and (host, workdir) not in places:
        places[(host, workdir)] = []  # node 0's GPUs all the same
    moved: set[str] = set()
    for (node_host, node_workdir), members in places.items():
        asked = _asked(ops, host, members)
        transport = await ops.transport(node_host)
        here = sample and (node_host, node_workdir) == (host, workdir)
        out = await run_scripts.watch(
            transport, node_workdir, here, poll.max_slice, _triples(members, asked)
        )
        moved |= _take_output(ops, host, out, asked)
    return moved


def _groups(
    ops: DaemonState, host: str, runs: list[RunInfo]
) -> dict[tuple[str, bool, str], list[RunInfo]]:
    """The runs by work directory and launcher: one far-side watch for each group."""
    # Runs keep the launcher they recorded: the host's own processes (watch.sh reads their
    # states) and a scheduler's jobs (its status does) are asked apart.
    groups: dict[tuple[str, bool, str], list[RunInfo]] = defaultdict(list)
    for run in runs:
        remote_dir = run.remote_dir or f"{run.workdir}/{run.run_id}"
        groups[(posixpath.dirname(remote_dir), *launcher_group(ops, run))].append(run)
    if not groups:
        # No run to ask about: the host's GPUs, and whether it answers at all.
        workdir = ops.hosts.config.host(host).workdir or DEFAULT_WORKDIR
        groups[(workdir, ops.launcher(host).states_from_status, "")] = []
    return groups


def _asked(ops: DaemonState, host: str, members: list[RunInfo]) -> dict[tuple[str, str], int]:
    """Where reading each run's log and metrics file stands: (run id, source) -> offset."""
    asked: dict[tuple[str, str], int] = {}
    for run in members:
        ops.metrics.plan(host, run.run_id, *planned_length(run.command))
        for source in ("log", "jsonl"):
            asked[(run.run_id, source)] = ops.metrics.consumed(host, run.run_id, source)
    return asked


def _take_output(
    ops: DaemonState, host: str, out: run_scripts.WatchReport, asked: dict[tuple[str, str], int]
) -> set[str]:
    """Feed the GPU sample and the slices of the runs' files; the run ids whose metrics moved."""
    moved: set[str] = set()
    if out.gpus:
        ops.metrics.add_gpu_sample(host, GpuSample(time=now(), gpus=gpu_stats(out.gpus, out.apps)))
    for piece in out.slices:
        sent = asked.get((piece.run_id, piece.name))
        if sent is None:
            continue  # not a run this poll asked about
        if piece.age is not None:
            # By this machine's clock: the host's own says how long ago, not when.
            ops.metrics.saw_output(host, piece.run_id, now() - piece.age)
        # The file is shorter than where reading stood: it was replaced, read it anew.
        restarted = piece.start < sent
        if ops.metrics.feed(host, piece.run_id, piece.name, piece.start, piece.data, restarted):
            moved.add(piece.run_id)
    return moved


def _mark_reads(
    ops: DaemonState,
    host: str,
    runs: list[RunInfo],
    fresh: list[RunInfo | None],
    from_status: set[str],
) -> None:
    for run, new in zip(runs, fresh, strict=True):
        # watch.sh reads a run's state before its files, so a run it saw over (or gone) has
        # sent its last bytes. A scheduler's state is read after the files: there, only a run
        # already over before this read is.
        over = is_ended(run.state) or new is None
        read_first = run.run_id not in from_status
        over = over or (read_first and new is not None and is_ended(new.state))
        ops.metrics.saw_read(host, run.run_id, attempt_of(new or run), over)
        if over:
            ops.keep_metrics(host, run.run_id)


def attempt_of(run: RunInfo) -> int:
    """The number of the run's latest attempt."""
    return run.attempts[-1].number if run.attempts else 1
