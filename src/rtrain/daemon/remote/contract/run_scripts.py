"""How runs stand and end: status.sh's rows (also stop.sh's), watch.sh, read_log.sh,
stop.sh, remove.sh, exec.sh and log_lines.sh, each with its typed answer."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal

import msgspec

from rtrain.daemon.remote.error_words import FarError
from rtrain.protocol.messages import StoppedBy
from rtrain.protocol.run_states import Ending, FarSide, RunState, next_state, state_word

from .answers import (
    Answer,
    Exit,
    Lines,
    Runner,
    as_float,
    as_int,
    pids,
)

log = logging.getLogger(__name__)


# ---- runs: status.sh rows, also printed by stop.sh -------------------------------------


class RunRow(msgspec.Struct, frozen=True):
    """`run ID STATE EXIT SIGNAL STARTED DETAIL`: how the far side says a run stands.
    `state` is a RunState (`unknown` only from a scheduler: a job that no source, squeue,
    sacct or its status file, accounts for), or `missing` (no such run directory)."""

    run_id: str
    state: RunState | Literal["missing"]
    exit_code: int | None = None
    signal: int | None = None
    started_at: float | None = None
    detail: str | None = None
    # Slurm runs: the job, and Slurm's own name for its state where it says more.
    job_id: str | None = None
    scheduler_state: str | None = None
    # Seconds a running run has been still (limits.sh's `stalled`); None when it is not.
    stalled_for: int | None = None
    # A failed torchrun run: when its first failing rank failed (epoch seconds, the host's
    # clock; rank_failure's time), which says which node of a run across hosts failed first.
    failed_at: float | None = None
    # Global rank 0 of a torchrun run ran on this host (rtrain-ranks' `.rtrain/rank0`).
    rank0: bool = False
    # A run across hosts: the node whose log holds global rank 0's lines (the run's metrics).
    rank0_node: int = 0
    # A stop the run's own limits made (limits.sh): which limit, at how many seconds.
    # status.sh says so in its detail (`limit: max_duration 21600`); read here, once.
    stopped_by: StoppedBy | None = None
    limit_seconds: int | None = None
    # How an ended run ended, where the row says more than its state (a limit, a run that
    # never launched; protocol/run_states.py), read here once.
    ending: Ending | None = None

    @property
    def exists(self) -> bool:
        return self.state != "missing"


def far_state(word: str) -> RunState:
    """A state word a script printed, checked where it enters RunInfo's typed state: a word
    this version does not know is `unknown` (never guessed as another), and logged."""
    if state_word(word) is None:
        log.warning("the far side said a run is %r, not a state this rtrain knows", word)
    return next_state(FarSide(word))


def run_row(values: list[str]) -> RunRow:
    """One `run` line's values (status.sh, watch.sh, stop.sh, read_log.sh) as a RunRow."""
    run_id, word, exit_code, signal, started, detail, stalled, failed_at, rank0 = (
        values + ["-"] * 9
    )[:9]
    state = "missing" if word == "missing" else far_state(word)
    # The far side cuts a reason at 300 bytes, maybe inside a character.
    said = None if detail in ("-", "") else detail.rstrip("\ufffd")
    limit = _limit_stop(said) if state == "stopped" else None
    ending: Ending | None = limit[0] if limit else None
    if state == "lost" and said == _NEVER_LAUNCHED:
        ending = "never_launched"
    return RunRow(
        run_id=run_id,
        state=state,
        exit_code=as_int(exit_code),
        signal=as_int(signal),
        started_at=as_float(started),
        detail=said,
        stalled_for=as_int(stalled),
        failed_at=as_float(failed_at),
        rank0=rank0 == "1",
        stopped_by=limit[0] if limit else None,
        limit_seconds=limit[1] if limit else None,
        ending=ending,
    )


# lib/run_state.sh's words for a run directory whose trainer never started (run_state).
_NEVER_LAUNCHED = "never launched"
# lib/run_state.sh's limit_detail: `limit: WHY SECONDS`, WHY as limits.sh writes it.
_LIMIT_PREFIX = "limit: "
_LIMIT_STOPS: dict[str, StoppedBy] = {"max_duration": "max_duration", "stalled": "stall"}


def _limit_stop(detail: str | None) -> tuple[StoppedBy, int] | None:
    """Which limit stopped the run, and at how many seconds, as a stopped row's detail says."""
    if detail is None or not detail.startswith(_LIMIT_PREFIX):
        return None
    why, _, seconds = detail.removeprefix(_LIMIT_PREFIX).partition(" ")
    if why not in _LIMIT_STOPS or not seconds.isdigit():
        return None
    return _LIMIT_STOPS[why], int(seconds)


class StatusReport(Answer, frozen=True, kw_only=True):
    runs: dict[str, RunRow]


async def status(transport: Runner, workdir: str, run_ids: Sequence[str]) -> StatusReport:
    """status.sh: one row per run id asked about (a missing run is a `missing` row)."""
    done = await transport.run("status", [workdir, *run_ids], timeout=60)
    rows = [run_row(values) for values in Lines(done.stdout).rows("run")]
    return StatusReport(
        runs={row.run_id: row for row in rows}, exit=done.returncode, error_text=done.error_text
    )


# ---- remove.sh, exec.sh, log_lines.sh ---------------------------------------------------


class Dweller(msgspec.Struct, frozen=True):
    """A process of no run whose working directory is in a run dir (remove.sh's `dweller`)."""

    pid: int
    command: str


class Removed(Answer, frozen=True, kw_only=True):
    """The run dir is gone (`ok`; `had_dir` false when nothing was there), or why not
    (`refused`: `running`, `queued`, or `busy`: `dwellers` still run in it; a directory
    that is not the run's exits NOT_A_RUN; SURVIVED: `dwellers` outlived a forced KILL)."""

    ok: bool
    had_dir: bool
    refused: str | None
    error: FarError | None
    dwellers: list[Dweller] = []


async def remove(transport: Runner, run_dir: str, run_id: str, force: bool = False) -> Removed:
    done = await transport.run("remove", [run_dir, run_id, "1" if force else "0"], timeout=120)
    lines = Lines(done.stdout)
    error = lines.error()
    removed = lines.value("removed")
    return Removed(
        ok=done.returncode == Exit.OK and removed is not None,
        had_dir=removed not in (None, "-"),
        refused=error.word.value if error and done.returncode == Exit.REFUSED else None,
        error=error,
        dwellers=[
            Dweller(pid=int(row[0]), command=row[1] if len(row) > 1 else "?")
            for row in lines.rows("dweller")
            if row and row[0].isdigit()
        ],
        exit=done.returncode,
        error_text=done.error_text,
    )


class Executed(Answer, frozen=True, kw_only=True):
    """`started`: the command ran, and `exit`, `stdout` and `stderr` are its own. Otherwise
    `error` says why it never ran (`run_not_found`, `no_program NAME`)."""

    started: bool
    stdout: bytes
    stderr: bytes
    error: FarError | None


EXEC_STARTED = b"exec\tstarted\n"


async def exec_in_run(
    transport: Runner, run_dir: str, run_id: str, command: Sequence[str], timeout: float
) -> Executed:
    done = await transport.run("exec", [run_dir, run_id, *command], timeout=timeout)
    head, marker, rest = done.stdout.partition(EXEC_STARTED)
    if marker:
        return Executed(
            started=True,
            stdout=rest,
            stderr=done.stderr,
            error=None,
            exit=done.returncode,
            error_text=done.error_text,
        )
    return Executed(
        started=False,
        stdout=b"",
        stderr=done.stderr,
        error=Lines(head).error(),
        exit=done.returncode,
        error_text=done.error_text,
    )


class LogLines(Answer, frozen=True, kw_only=True):
    """Where the last N lines of train.log begin; None when the run dir is not there."""

    offset: int | None


async def log_lines(transport: Runner, run_dir: str, run_id: str, count: int) -> LogLines:
    done = await transport.run("log_lines", [run_dir, run_id, str(count)], timeout=60)
    offset = as_int(Lines(done.stdout).value("offset")) if done.returncode == Exit.OK else None
    return LogLines(offset=offset, exit=done.returncode, error_text=done.error_text)


# ---- stop.sh -----------------------------------------------------------------------------


class StopReport(Answer, frozen=True, kw_only=True):
    """`outcome`: stopped | not_running | refused | survived, or "" when the script did not
    get as far as saying one; `pending` (a run across hosts) when some nodes did not answer."""

    outcome: str
    reason: str | None
    survivors: list[int]
    killed: list[int]
    # How the run stands once nothing of it is left, when stop.sh said so.
    run: RunRow | None
    # A run across hosts (outcome `pending`): the nodes that did not answer, still to stop.
    pending: list[int] = []


async def stop(
    transport: Runner, run_dir: str, run_id: str, grace: float, force: bool
) -> StopReport:
    done = await transport.run(
        "stop", [run_dir, run_id, f"{grace:.1f}", "1" if force else "0"], timeout=grace + 60
    )
    lines = Lines(done.stdout)
    rows = lines.rows("run")
    return StopReport(
        outcome=lines.value("outcome") or "",
        reason=lines.value("reason"),
        survivors=pids(lines.value("survivors")),
        killed=pids(lines.value("killed")),
        run=run_row(rows[0]) if rows else None,
        exit=done.returncode,
        error_text=done.error_text,
    )


# ---- read_log.sh -------------------------------------------------------------------------


class LogSlice(Answer, frozen=True, kw_only=True):
    """`log INODE SIZE START COUNT STATE EXIT`, then COUNT bytes of train.log from START.
    `ok` is False when the header is missing (`missing`: there is no such run)."""

    ok: bool
    missing: bool
    inode: str = "-"
    size: int = 0
    start: int = 0
    state: RunState = "unknown"
    exit_code: int | None = None
    data: bytes = b""


async def read_log(
    transport: Runner, run_dir: str, run_id: str, offset: int, limit: int, inode: str
) -> LogSlice:
    done = await transport.run(
        "read_log", [run_dir, run_id, str(offset), str(limit), inode], timeout=60
    )
    header, _, body = done.stdout.partition(b"\n")
    fields = header.decode(errors="replace").split("\t")
    if fields[0] != "log" or len(fields) < 7:
        missing = b"missing" in header or done.returncode == Exit.NOT_FOUND
        return LogSlice(ok=False, missing=missing, exit=done.returncode, error_text=done.error_text)
    _, inode_now, size, start, count, state, exit_code = fields[:7]
    return LogSlice(
        ok=True,
        missing=False,
        inode=inode_now,
        size=int(size),
        start=int(start),
        state=far_state(state),
        exit_code=as_int(exit_code),
        data=body[: int(count)],
        exit=done.returncode,
        error_text=done.error_text,
    )


# ---- watch.sh ----------------------------------------------------------------------------


class WatchSlice(msgspec.Struct, frozen=True):
    """`slice RUN_ID NAME START COUNT SIZE AGE`, then COUNT raw bytes of the file from
    START."""

    run_id: str
    name: str  # "log" (train.log) or "jsonl" (metrics.jsonl)
    start: int
    size: int  # of the whole file when it was read
    data: bytes
    # Of train.log: seconds since it last changed, by the host's clock (None: not told).
    age: int | None = None


class WatchReport(Answer, frozen=True, kw_only=True):
    """watch.sh: run rows, nvidia-smi's CSV lines (`gpus`; `apps` as (run id or "-", CSV)),
    and the slices."""

    runs: dict[str, RunRow]
    gpus: list[str]
    apps: list[tuple[str, str]]
    slices: list[WatchSlice]


async def watch(
    transport: Runner,
    workdir: str,
    gpus: bool,
    limit: int,
    runs: Sequence[tuple[str, int, int]],
) -> WatchReport:
    """watch.sh for (run id, log offset, metrics.jsonl offset) triples."""
    args = [workdir, "1" if gpus else "0", str(limit)]
    for run_id, log_offset, jsonl_offset in runs:
        args += [run_id, str(log_offset), str(jsonl_offset)]
    done = await transport.run("watch", args, timeout=60)
    return decode_watch(done.stdout, done.returncode, done.error_text)


def decode_watch(stdout: bytes, exit: int = 0, error_text: str = "") -> WatchReport:
    """watch.sh's output. Slices hold a log's raw bytes, which may imitate any line (a
    forged `run` row among them): machine lines are read only before the first slice, and
    each slice is taken by its byte count. A slice cut short is dropped."""
    rows: list[RunRow] = []
    gpu_lines: list[str] = []
    apps: list[tuple[str, str]] = []
    slices: list[WatchSlice] = []
    at = 0
    while at < len(stdout):
        end = stdout.find(b"\n", at)
        if end < 0:
            break
        key, *fields = stdout[at:end].decode(errors="replace").split("\t")
        at = end + 1
        if key == "slice":
            if len(fields) < 5 or not all(f.isdigit() for f in fields[2:5]):
                break
            start, count, size = (int(f) for f in fields[2:5])
            data = stdout[at : at + count]
            if len(data) < count:
                break
            age = int(fields[5]) if len(fields) > 5 and fields[5].isdigit() else None
            slices.append(WatchSlice(fields[0], fields[1], start, size, data, age))
            at += count + 1  # and the newline after the bytes
        elif slices:
            break  # nothing but slices may follow a slice
        elif key == "run":
            rows.append(run_row(fields))
        elif key == "gpu" and fields:
            gpu_lines.append(fields[0])
        elif key == "app" and len(fields) >= 2:
            apps.append((fields[0], fields[1]))
    return WatchReport(
        runs={row.run_id: row for row in rows},
        gpus=gpu_lines,
        apps=apps,
        slices=slices,
        exit=exit,
        error_text=error_text,
    )
