"""The contract with the far side: every script's arguments, machine lines and exit codes.

A far-side script prints `key<TAB>value...` lines on stdout (send.sh: its verdict on
stderr) and exits with one of common.sh's `E_*` codes. This module is the only reader of
those lines: each script has one typed function here that runs it through a transport and
returns a Struct, and the scripts the transports run themselves (receive, send, put_chunk,
hash_file) are decoded here too. What an answer *means* for a user (which error, which
sentence) stays with the operations.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping, Sequence
from enum import IntEnum
from typing import TYPE_CHECKING, Literal

import msgspec

from rtrain.daemon.remote import script
from rtrain.daemon.remote.error_words import ErrorWord, FarError, far_error
from rtrain.protocol.messages import StoppedBy
from rtrain.protocol.run_states import FarSide, RunState, next_state, state_word

if TYPE_CHECKING:
    from rtrain.daemon.ssh.transport import Completed, Transport

log = logging.getLogger(__name__)


class Exit(IntEnum):
    """common.sh's exit codes (`E_*`); tests/remote/test_contract.py keeps the two equal."""

    OK = 0
    USAGE = 2
    MISMATCH = 3
    WRITE = 4
    REFUSED = 5
    SURVIVED = 6
    OUTSIDE = 7
    NOT_FOUND = 8
    BAD_NAME = 9
    BAD_SECRET = 10
    NO_DETACH = 11
    LAUNCH_TIMEOUT = 12
    IO = 14
    ALREADY_LAUNCHED = 15
    RUN_EXISTS = 17
    GPUS_BUSY = 18
    SCHEDULER = 20
    NOT_A_RUN = 21


class Lines:
    """A script's machine lines, split once: `key<TAB>value...` per line."""

    def __init__(self, data: bytes) -> None:
        self._lines = [line.split("\t") for line in data.decode(errors="replace").splitlines()]

    def last(self, key: str) -> list[str] | None:
        """The values of the last `key` line; None when there is none."""
        for line in reversed(self._lines):
            if line[0] == key:
                return line[1:]
        return None

    def value(self, key: str) -> str | None:
        """The first value of the last `key` line (a key with no value gives "")."""
        values = self.last(key)
        if values is None:
            return None
        return values[0] if values else ""

    def rows(self, key: str) -> list[list[str]]:
        """The values of every `key` line, in order."""
        return [line[1:] for line in self._lines if line[0] == key]

    def __contains__(self, key: object) -> bool:
        return any(line[0] == key for line in self._lines)

    def error(self) -> FarError | None:
        """The last `error` line, its word decoded (daemon/remote/error_words.py)."""
        return far_error(self.last("error"))

    def __bool__(self) -> bool:
        return bool(self._lines)


class Answer(msgspec.Struct, frozen=True, kw_only=True):
    """What every script's answer carries besides its own fields."""

    exit: int
    # The last line a script said for humans (stderr), or its exit status: for messages.
    error_text: str


def _said(lines: Lines, word: ErrorWord) -> bool:
    """The script's last `error` line is exactly `word`, with nothing after it."""
    error = lines.error()
    return error is not None and error.word == word and not error.args


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.lstrip("-").isdigit() else None


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _pids(value: str | None) -> list[int]:
    return [int(word) for word in (value or "").split() if word.isdigit()]


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
    # A stop the run's own limits made (limits.sh): which limit, at how many seconds.
    # status.sh says so in its detail (`limit: max_duration 21600`); read here, once.
    stopped_by: StoppedBy | None = None
    limit_seconds: int | None = None

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
    run_id, word, exit_code, signal, started, detail, stalled = (values + ["-"] * 7)[:7]
    state = "missing" if word == "missing" else far_state(word)
    # The far side cuts a reason at 300 bytes, maybe inside a character.
    said = None if detail in ("-", "") else detail.rstrip("\ufffd")
    limit = _limit_stop(said) if state == "stopped" else None
    return RunRow(
        run_id=run_id,
        state=state,
        exit_code=_int(exit_code),
        signal=_int(signal),
        started_at=_float(started),
        detail=said,
        stalled_for=_int(stalled),
        stopped_by=limit[0] if limit else None,
        limit_seconds=limit[1] if limit else None,
    )


# common.sh's limit_detail: `limit: WHY SECONDS`, WHY as limits.sh writes it.
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


async def status(transport: Transport, workdir: str, run_ids: Sequence[str]) -> StatusReport:
    """status.sh: one row per run id asked about (a missing run is a `missing` row)."""
    done = await transport.run("status", [workdir, *run_ids], timeout=60)
    rows = [run_row(values) for values in Lines(done.stdout).rows("run")]
    return StatusReport(
        runs={row.run_id: row for row in rows}, exit=done.returncode, error_text=done.error_text
    )


# ---- preflight.sh ------------------------------------------------------------------------

# A field the far side could not fill.
_NONE = ("", "-", "?", "[N/A]", "[Not Supported]", "N/A")


def _field(value: str | None) -> str | None:
    return None if value is None or value.strip() in _NONE else value.strip()


def _count(value: str | None) -> int | None:
    text = _field(value)
    return int(text) if text is not None and text.isdigit() else None


class ProbedTorch(msgspec.Struct, frozen=True):
    version: str
    cuda: str | None
    cuda_available: bool | None
    device_count: int | None


class ProbedGpu(msgspec.Struct, frozen=True):
    index: int
    name: str
    memory_mib: int | None
    memory_used_mib: int | None
    utilization_percent: int | None
    uuid: str | None
    driver_version: str | None


class ProbedGpuApp(msgspec.Struct, frozen=True):
    gpu_uuid: str
    pid: int
    used_mib: int | None
    run_id: str | None
    name: str | None


class ProbedCandidate(msgspec.Struct, frozen=True):
    path: str
    version: str | None
    torch: ProbedTorch | None
    executable: str | None
    error: str | None


class ProbedHub(msgspec.Struct, frozen=True):
    model: str
    # None when the Hub could not be reached at all.
    status: int | None
    error_code: str | None
    message: str | None


class PreflightReport(msgspec.Struct, kw_only=True):
    """Everything preflight.sh found; the script reports, the operation judges. Filled line
    by line as the answer is read, so not frozen; `exit` and `error_text` as in Answer."""

    exit: int
    error_text: str

    python_ok: bool = False
    python_version: str | None = None
    python_executable: str | None = None
    python_status: int | None = None
    python_error: str | None = None
    # The interpreter's PEP 508 marker environment (python_version, sys_platform, ...).
    python_env: dict[str, str] = {}
    torch: ProbedTorch | None = None
    torch_error: str | None = None
    # Distribution name -> installed version; None: not installed; "?": could not be read.
    dists: dict[str, str | None] = {}
    dists_unchecked: bool = False
    nvidia_smi: str | None = None
    nvidia_smi_error: str | None = None
    gpus: list[ProbedGpu] = []
    gpu_apps: list[ProbedGpuApp] = []
    driver_cuda: str | None = None
    candidates: list[ProbedCandidate] = []
    hub: list[ProbedHub] = []
    hub_endpoint: str | None = None
    hub_token_source: str | None = None
    hub_failed: str | None = None
    workdir: str | None = None
    workdir_ok: bool = False
    workdir_error: str | None = None
    free_bytes: int | None = None
    setsid: bool | None = None
    boot_id: str | None = None
    uname: str | None = None
    # Whether the script ran to its end, and what the login printed before it.
    complete: bool = False
    shell_noise: str | None = None


def _torch(
    version: str | None, cuda: str | None, available: str | None, count: str | None
) -> ProbedTorch | None:
    if _field(version) is None:
        return None
    assert version is not None
    avail = _field(available)
    return ProbedTorch(
        version=version.strip(),
        cuda=None if _field(cuda) in (None, "none") else _field(cuda),
        cuda_available=None if avail is None else avail == "1",
        device_count=_count(count),
    )


# The probe imports torch in each interpreter that has it; a slow disk makes that slow.
PREFLIGHT_TIMEOUT = 150


async def preflight(
    transport: Transport,
    python: str,
    workdir: str,
    *,
    dists: Sequence[str] = (),
    hf_models: Sequence[str] = (),
    hf_token: str = "",
) -> PreflightReport:
    """preflight.sh PYTHON WORKDIR [--dist NAME]... [--hf MODEL]...; the token on stdin only."""
    args = [python, workdir]
    for name in dists:
        args += ["--dist", name]
    for model in hf_models:
        args += ["--hf", model]
    stdin = f"{hf_token}\n".encode() if hf_models else None
    done = await transport.run("preflight", args, stdin=stdin, timeout=PREFLIGHT_TIMEOUT)
    return parse_preflight(done.stdout, done.returncode, done.error_text, done.noise)


def parse_preflight(
    stdout: bytes, exit: int = 0, error_text: str = "", noise_bytes: bytes = b""
) -> PreflightReport:
    report = PreflightReport(exit=exit, error_text=error_text)
    lines = stdout.decode(errors="replace").splitlines()
    # What the login printed before the script (the transport keeps it apart).
    noise = [line for line in noise_bytes.decode(errors="replace").splitlines() if line.strip()]
    if noise:
        report.shell_noise = "\n".join(noise)[:500]
    report.complete = "end" in lines
    body = lines
    torch_fields: dict[str, str] = {}
    torch_gpus: list[str] = []
    for line in body:
        key, *values = line.split("\t")
        first = values[0] if values else ""
        if key == "python_ok":
            report.python_ok = first == "1"
        elif key == "python_version":
            report.python_version = _field(first)
        elif key == "python_executable":
            report.python_executable = _field(first)
        elif key == "python_status":
            report.python_status = _count(first)
        elif key == "python_error":
            report.python_error = _field("\t".join(values))
        elif key == "python_env":
            report.python_env = dict(v.split("=", 1) for v in values if "=" in v)
        elif key in ("torch", "cuda"):
            torch_fields[key] = first
        elif key == "torch_gpus":
            torch_gpus = values
        elif key == "torch_error":
            report.torch_error = _field("\t".join(values))
        elif key == "dist" and values:
            version = values[1] if len(values) > 1 else "?"
            report.dists[first] = None if version == "-" else version
        elif key == "dists_unchecked":
            report.dists_unchecked = True
        elif key == "nvidia_smi":
            report.nvidia_smi = first
            report.nvidia_smi_error = _field(" ".join(values[1:]))
        elif key == "gpu" and len(values) >= 2:
            padded = [*values, *[""] * 7][:7]
            report.gpus.append(
                ProbedGpu(
                    index=_count(padded[0]) if _count(padded[0]) is not None else len(report.gpus),  # type: ignore[arg-type]
                    name=padded[1],
                    memory_mib=_count(padded[2]),
                    memory_used_mib=_count(padded[3]),
                    utilization_percent=_count(padded[4]),
                    uuid=_field(padded[5]),
                    driver_version=_field(padded[6]),
                )
            )
        elif key == "gpu_app" and len(values) >= 4 and _count(values[1]) is not None:
            report.gpu_apps.append(
                ProbedGpuApp(
                    gpu_uuid=first.strip(),
                    pid=_count(values[1]),  # type: ignore[arg-type]
                    used_mib=_count(values[2]),
                    run_id=_field(values[3]),
                    name=_field(values[4]) if len(values) > 4 else None,
                )
            )
        elif key == "driver_cuda":
            report.driver_cuda = _field(first)
        elif key == "candidate" and len(values) >= 8:
            path, version, tv, tc, ta, td, exe, error = values[:8]
            report.candidates.append(
                ProbedCandidate(
                    path=path,
                    version=_field(version),
                    torch=_torch(tv, tc, ta, td),
                    executable=_field(exe),
                    error=_field(error),
                )
            )
        elif key == "hf" and len(values) >= 2:
            padded = [*values, "", ""][:4]
            report.hub.append(
                ProbedHub(
                    model=first,
                    status=_count(padded[1]),
                    error_code=_field(padded[2]),
                    message=_field(padded[3]),
                )
            )
        elif key == "hf_endpoint":
            report.hub_endpoint = _field(first)
        elif key == "hf_token":
            report.hub_token_source = _field(first)
        elif key == "hf_failed":
            report.hub_failed = _field(first) or "the check ended without an answer"
        elif key == "workdir":
            report.workdir = _field(first)
        elif key == "workdir_ok":
            report.workdir_ok = first == "1"
        elif key == "workdir_error":
            report.workdir_error = _field("\t".join(values))
        elif key == "free_bytes":
            report.free_bytes = _count(first)
        elif key == "setsid":
            report.setsid = first == "1"
        elif key == "boot_id":
            report.boot_id = _field(first)
        elif key == "uname":
            report.uname = _field(first)
    if "torch" in torch_fields:
        padded = [*torch_gpus, "", ""][:2]
        report.torch = _torch(torch_fields["torch"], torch_fields.get("cuda"), *padded)
    return report


# ---- gpus.sh -----------------------------------------------------------------------------


class GpuSlot(msgspec.Struct, frozen=True):
    """One GPU as the runs of a workdir share it: `free`, `held` (by run `holder`), or
    `busy` (`used_mib` in use by a process that is no run of this workdir)."""

    index: int
    state: str
    holder: str | None
    used_mib: int | None


class GpuClaims(Answer, frozen=True, kw_only=True):
    total: int
    gpus: list[GpuSlot]

    @property
    def free(self) -> list[int]:
        return [slot.index for slot in self.gpus if slot.state == "free"]


async def gpu_claims(transport: Transport, workdir: str, share: bool) -> GpuClaims:
    """gpus.sh look: which GPUs of the host the runs of `workdir` hold now."""
    done = await transport.run("gpus", ["look", workdir, "1" if share else "0"], timeout=60)
    lines = Lines(done.stdout)
    slots = []
    for row in lines.rows("gpu"):
        index = _int(row[0]) if row else None
        if index is None or len(row) < 3:
            continue
        state = row[1]
        slots.append(
            GpuSlot(
                index=index,
                state=state,
                holder=row[2] if state == "held" else None,
                used_mib=_int(row[2]) if state == "busy" else None,
            )
        )
    return GpuClaims(
        total=_int(lines.value("gpus_total")) or 0,
        gpus=slots,
        exit=done.returncode,
        error_text=done.error_text,
    )


# ---- prepare.sh and launch.sh ------------------------------------------------------------


class Prepared(Answer, frozen=True, kw_only=True):
    """The run dir claimed (`run_dir`), or why not: `exists` when the run id is taken."""

    run_dir: str | None
    exists: bool


async def prepare(transport: Transport, workdir: str, run_id: str) -> Prepared:
    done = await transport.run("prepare", [workdir, run_id], timeout=60)
    lines = Lines(done.stdout)
    return Prepared(
        run_dir=(lines.value("run_dir") or None) if done.returncode == Exit.OK else None,
        exists=done.returncode == Exit.RUN_EXISTS or _said(lines, ErrorWord.RUN_EXISTS),
        exit=done.returncode,
        error_text=done.error_text,
    )


class Discarded(Answer, frozen=True, kw_only=True):
    """The run dir of a start that launched nothing is gone (`ok`), or why not (`error`:
    `already_launched`, `not_a_run`, `rm ...`)."""

    ok: bool
    error: FarError | None


async def discard(transport: Transport, workdir: str, run_id: str) -> Discarded:
    done = await transport.run("discard", [workdir, run_id], timeout=30)
    lines = Lines(done.stdout)
    return Discarded(
        ok=done.returncode == Exit.OK and "discarded" in lines,
        error=lines.error(),
        exit=done.returncode,
        error_text=done.error_text,
    )


class LimitsLine(msgspec.Struct, frozen=True):
    """launch.sh's `+limits` line: limits.sh's arguments after the attempt."""

    max_duration: int  # seconds, 0: none
    stall_after: int  # seconds, 0: none
    on_stall: str  # flag | stop
    grace: float  # seconds the stop a limit makes waits after SIGTERM


def launch_stdin(
    secrets: Mapping[str, str],
    env: Mapping[str, str],
    setup: str | None,
    meta: Mapping[str, object],
    attempt: int = 1,
    wrapper: int = 0,
    limits: LimitsLine | None = None,
) -> bytes:
    """launch.sh's stdin: `NAME<TAB>base64` per secret, then the `+` lines for the rest of
    the launch (env, setup, extra meta.json keys, the attempt number of a restart, how
    many leading words of the command are rtrain's own wrapper, not the trainer's, and the
    limits the host watches)."""

    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    lines = [f"{name}\t{b64(value)}" for name, value in secrets.items()]
    lines += [f"+env\t{name}\t{b64(value)}" for name, value in env.items()]
    if setup is not None:
        lines.append(f"+setup\t{b64(setup)}")
    for key, value in meta.items():
        lines.append(f"+meta\t{key}\t{b64(msgspec.json.encode(value).decode())}")
    if attempt != 1:
        lines.append(f"+attempt\t{attempt}")
    if wrapper:
        lines.append(f"+wrapper\t{wrapper}")
    if limits is not None:
        lines.append(
            f"+limits\t{limits.max_duration}\t{limits.stall_after}\t{limits.on_stall}\t"
            f"{limits.grace:.1f}"
        )
    return "".join(f"{line}\n" for line in lines).encode()


class LaunchInput(msgspec.Struct, frozen=True):
    """launch_stdin's lines, split again for a launcher that is not launch.sh: the secret
    lines as they were (still only for stdin), and the values of the `+` lines."""

    secrets: bytes
    env: dict[str, str]
    setup: str | None
    # Extra meta.json keys, decoded from their JSON; the attempt a restart starts.
    meta: dict[str, object]
    attempt: int


def split_launch_stdin(data: bytes) -> LaunchInput:
    secrets: list[bytes] = []
    env: dict[str, str] = {}
    setup = None
    meta: dict[str, object] = {}
    attempt = 1
    for line in data.splitlines():
        if not line.startswith(b"+"):
            secrets.append(line + b"\n")
            continue
        key, *values = line.decode().split("\t")
        if key == "+env" and len(values) == 2:
            env[values[0]] = base64.b64decode(values[1]).decode()
        elif key == "+setup" and len(values) == 1:
            setup = base64.b64decode(values[0]).decode()
        elif key == "+meta" and len(values) == 2:
            meta[values[0]] = msgspec.json.decode(base64.b64decode(values[1]))
        elif key == "+attempt" and len(values) == 1 and values[0].isdigit():
            attempt = int(values[0])
    return LaunchInput(secrets=b"".join(secrets), env=env, setup=setup, meta=meta, attempt=attempt)


class Launched(Answer, frozen=True, kw_only=True):
    """The trainer's session leader (`pid`), or for a batch job its id (`job_id`), or why
    not (`error`: the `error` line's words). `already_launched`: an earlier launch of the
    same run claimed it first."""

    pid: int | None
    started_at: float | None
    error: FarError | None
    already_launched: bool
    # A restart of a run that is running, or of one that was never launched.
    running: bool = False
    never_launched: bool = False
    job_id: str | None = None


async def launch(
    transport: Transport,
    run_dir: str,
    run_id: str,
    python: str,
    command: Sequence[str],
    secrets: bytes,
) -> Launched:
    """launch.sh; `secrets` are `NAME<TAB>base64` lines, sent on stdin only."""
    done = await transport.run(
        "launch", [run_dir, run_id, python, *command], stdin=secrets, timeout=60
    )
    lines = Lines(done.stdout)
    pid = _int(lines.value("pid")) if done.returncode == Exit.OK else None
    return Launched(
        pid=pid,
        started_at=_float(lines.value("started_at")),
        error=lines.error(),
        already_launched=_said(lines, ErrorWord.ALREADY_LAUNCHED),
        running=_said(lines, ErrorWord.RUNNING),
        never_launched=_said(lines, ErrorWord.NEVER_LAUNCHED),
        exit=done.returncode,
        error_text=done.error_text,
    )


# ---- free_port.sh ------------------------------------------------------------------------


class FreePort(Answer, frozen=True, kw_only=True):
    """A TCP port free on the host a moment ago (None: why is in `error`)."""

    port: int | None
    error: list[str]


async def free_port(transport: Transport, python: str) -> FreePort:
    done = await transport.run("free_port", [python], timeout=60)
    lines = Lines(done.stdout)
    port = _int(lines.value("port")) if done.returncode == Exit.OK else None
    return FreePort(
        port=port,
        error=lines.last("error") or [],
        exit=done.returncode,
        error_text=done.error_text,
    )


# ---- input_tree.sh ------------------------------------------------------------------------


class Shaped(Answer, frozen=True, kw_only=True):
    """The run dir has the directories and modes asked for (`ok`), or why not (`error`)."""

    ok: bool
    error: FarError | None


async def input_tree(
    transport: Transport,
    run_dir: str,
    run_id: str,
    dirs: Sequence[str],
    executables: Sequence[str],
    links: Sequence[tuple[str, str]] = (),
) -> Shaped:
    """Make `dirs` (relative, parents first) in the run dir, give `executables` their
    owner's x bit, and make each (path, target) of `links` a symbolic link; the paths travel
    on stdin, one a line."""
    steps = [f"d\t{rel}\n" for rel in dirs] + [f"x\t{rel}\n" for rel in executables]
    steps += [f"l\t{rel}\t{target}\n" for rel, target in links]
    done = await transport.run(
        "input_tree", [run_dir, run_id], stdin="".join(steps).encode(), timeout=60
    )
    lines = Lines(done.stdout)
    return Shaped(
        ok=done.returncode == Exit.OK and "ok" in lines,
        error=lines.error(),
        exit=done.returncode,
        error_text=done.error_text,
    )


# ---- remove.sh, exec.sh, log_lines.sh ---------------------------------------------------


class Removed(Answer, frozen=True, kw_only=True):
    """The run dir is gone (`ok`; `had_dir` false when nothing was there), or why not
    (`refused`: `running` or `queued`; a directory that is not the run's exits NOT_A_RUN)."""

    ok: bool
    had_dir: bool
    refused: str | None
    error: FarError | None


async def remove(transport: Transport, run_dir: str, run_id: str) -> Removed:
    done = await transport.run("remove", [run_dir, run_id], timeout=120)
    lines = Lines(done.stdout)
    error = lines.error()
    removed = lines.value("removed")
    return Removed(
        ok=done.returncode == Exit.OK and removed is not None,
        had_dir=removed not in (None, "-"),
        refused=error.word.value if error and done.returncode == Exit.REFUSED else None,
        error=error,
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
    transport: Transport, run_dir: str, run_id: str, command: Sequence[str], timeout: float
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


async def log_lines(transport: Transport, run_dir: str, run_id: str, count: int) -> LogLines:
    done = await transport.run("log_lines", [run_dir, run_id, str(count)], timeout=60)
    offset = _int(Lines(done.stdout).value("offset")) if done.returncode == Exit.OK else None
    return LogLines(offset=offset, exit=done.returncode, error_text=done.error_text)


# ---- stop.sh -----------------------------------------------------------------------------


class StopReport(Answer, frozen=True, kw_only=True):
    """`outcome`: stopped | not_running | refused | survived, or "" when the script did not
    get as far as saying one."""

    outcome: str
    reason: str | None
    survivors: list[int]
    killed: list[int]
    # How the run stands once nothing of it is left, when stop.sh said so.
    run: RunRow | None


async def stop(
    transport: Transport, run_dir: str, run_id: str, grace: float, force: bool
) -> StopReport:
    done = await transport.run(
        "stop", [run_dir, run_id, f"{grace:.1f}", "1" if force else "0"], timeout=grace + 60
    )
    lines = Lines(done.stdout)
    rows = lines.rows("run")
    return StopReport(
        outcome=lines.value("outcome") or "",
        reason=lines.value("reason"),
        survivors=_pids(lines.value("survivors")),
        killed=_pids(lines.value("killed")),
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
    transport: Transport, run_dir: str, run_id: str, offset: int, limit: int, inode: str
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
        exit_code=_int(exit_code),
        data=body[: int(count)],
        exit=done.returncode,
        error_text=done.error_text,
    )


# ---- watch.sh ----------------------------------------------------------------------------


class WatchSlice(msgspec.Struct, frozen=True):
    """`slice RUN_ID NAME START COUNT SIZE`, then COUNT raw bytes of the file from START."""

    run_id: str
    name: str  # "log" (train.log) or "jsonl" (metrics.jsonl)
    start: int
    size: int  # of the whole file when it was read
    data: bytes


class WatchReport(Answer, frozen=True, kw_only=True):
    """watch.sh: run rows, nvidia-smi's CSV lines (`gpus`; `apps` as (run id or "-", CSV)),
    and the slices."""

    runs: dict[str, RunRow]
    gpus: list[str]
    apps: list[tuple[str, str]]
    slices: list[WatchSlice]


async def watch(
    transport: Transport,
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
            slices.append(WatchSlice(fields[0], fields[1], start, size, data))
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


# ---- list_files.sh -----------------------------------------------------------------------


class ListedFile(msgspec.Struct, frozen=True):
    size: int
    # None when the listing was asked not to hash (send.sh hashes as it sends).
    sha256: str | None
    path: str


class Listing(Answer, frozen=True, kw_only=True):
    """Every regular file at or under the path, and empty directories; or, in `error`, the
    words of the `error` line (`path_outside_run`, `not_found`, `run_not_found`, ...)."""

    files: list[ListedFile]
    dirs: list[str]
    error: FarError | None


async def list_files(transport: Transport, run_dir: str, rel: str, hashed: bool) -> Listing:
    args = [run_dir, rel] if hashed else [run_dir, rel, "none"]
    done = await transport.run("list_files", args, timeout=300)
    lines = Lines(done.stdout)
    errors = lines.rows("error")
    return Listing(
        files=[
            ListedFile(int(size), None if sha == "-" else sha, path)
            for size, sha, path in (row[:3] for row in lines.rows("file") if len(row) >= 3)
        ],
        dirs=[row[0] for row in lines.rows("dir") if row],
        error=far_error(errors[0]) if errors else None,
        exit=done.returncode,
        error_text=done.error_text,
    )


# ---- what the transports run themselves ---------------------------------------------------


class Received(msgspec.Struct, frozen=True):
    """receive.sh's or put_chunk.sh's answer: the file kept (`ok`), a chunk written (at
    `written`), or why not."""

    ok: bool
    written: int | None
    mismatch: bool
    error: FarError | None


def received(done: Completed) -> Received:
    lines = Lines(done.stdout)
    return Received(
        ok="ok" in lines,
        written=_int(lines.value("written")),
        mismatch="mismatch" in lines,
        error=lines.error(),
    )


class Sent(msgspec.Struct, frozen=True):
    """send.sh's verdict on stderr: the sha256 of the bytes it sent, or `changed` (the file
    moved while it was read)."""

    sha256: str | None
    changed: bool


def sent(done: Completed) -> Sent:
    lines = Lines(done.stderr)
    return Sent(sha256=lines.value("sent"), changed="changed" in lines)


class Hashed(msgspec.Struct, frozen=True):
    size: int
    sha256: str


def hashed(done: Completed) -> Hashed | None:
    """hash_file.sh's `file SIZE SHA256`; None unless it said exactly that."""
    rows = Lines(done.stdout).rows("file")
    if done.returncode != Exit.OK or len(rows) != 1 or len(rows[0]) != 2:
        return None
    size = _int(rows[0][0])
    return None if size is None else Hashed(size, rows[0][1])


# ---- Slurm: slurm_submit.sh, slurm_poll.sh, slurm_cancel.sh, slurm_preflight.sh -------------


async def slurm_submit(
    transport: Transport,
    run_dir: str,
    run_id: str,
    attempt: int,
    meta: Mapping[str, object],
    batch_script: str,
    sbatch_args: Sequence[str],
    secrets: bytes,
) -> Launched:
    """slurm_submit.sh: the batch script kept in the run dir and submitted; `job_id`, or
    why not (`error`: `sbatch_refused SBATCH'S WORDS`, `already_launched`, ...). `meta` goes
    into meta.json, one `"key": JSON` line each, as launch.sh writes its own."""
    meta_lines = "".join(
        f"  {msgspec.json.encode(key).decode()}: {msgspec.json.encode(value).decode()},\n"
        for key, value in meta.items()
    )
    done = await transport.run(
        "slurm_submit",
        [run_dir, run_id, str(attempt), meta_lines, batch_script, *sbatch_args],
        stdin=secrets,
        timeout=60,
    )
    lines = Lines(done.stdout)
    job = lines.value("job") if done.returncode == Exit.OK else None
    return Launched(
        pid=None,
        job_id=job or None,
        started_at=_float(lines.value("started_at")),
        error=lines.error(),
        already_launched=_said(lines, ErrorWord.ALREADY_LAUNCHED),
        exit=done.returncode,
        error_text=done.error_text,
    )


class JobReport(msgspec.Struct, frozen=True):
    """`slurm RUN_ID JOB_ID SOURCE STATE REASON EXIT STATUS_FILE STOP SETUP WHY`: how a run's job
    stands. `source` says who answered: squeue, sacct, none (nobody knows the job; `reason`
    says why) or missing (no run directory, or a run never submitted)."""

    run_id: str
    job_id: str | None
    source: str
    state: str  # Slurm's state name (PENDING, RUNNING, TIMEOUT, CANCELLED ...), or "-"
    reason: str  # squeue's %r, sacct's Reason, or why neither knows the job
    exit_code: int | None  # sacct's ExitCode before the colon
    signal: int | None  # ...and after it
    status_file: int | None  # the run's own exit status
    stop_requested: bool = False  # rtrain's stop asked the run to end
    setup_failed: bool = False  # the run's setup step failed; its trainer never started
    why: str | None = None  # why a workload with a non-zero status failed (as status.sh says)


JOB_SOURCES = ("squeue", "sacct", "none", "missing")


def job_report(values: list[str]) -> JobReport | None:
    """One `slurm` line's values; None for a line that is not one."""
    if len(values) < 7 or values[2] not in JOB_SOURCES:
        return None
    run_id, job_id, source, state, reason, exit_field, status_field = values[:7]
    code, _, sig = exit_field.partition(":")
    return JobReport(
        run_id=run_id,
        job_id=job_id if job_id.isdigit() else None,
        source=source,
        state=state,
        reason="" if reason == "-" else reason,
        exit_code=_int(code) if exit_field != "-" else None,
        signal=_int(sig) if exit_field != "-" else None,
        status_file=_int(status_field),
        stop_requested=len(values) > 7 and values[7] == "1",
        setup_failed=len(values) > 8 and values[8] == "1",
        why=values[9] if len(values) > 9 and values[9] not in ("", "-") else None,
    )


class JobPoll(Answer, frozen=True, kw_only=True):
    jobs: dict[str, JobReport]


async def slurm_poll(transport: Transport, workdir: str, run_ids: Sequence[str]) -> JobPoll:
    """slurm_poll.sh: one squeue (and at most one sacct) for every run asked about."""
    done = await transport.run("slurm_poll", [workdir, *run_ids], timeout=60)
    reports = [job_report(values) for values in Lines(done.stdout).rows("slurm")]
    return JobPoll(
        jobs={r.run_id: r for r in reports if r is not None},
        exit=done.returncode,
        error_text=done.error_text,
    )


class JobCancelled(Answer, frozen=True, kw_only=True):
    """slurm_cancel.sh: the job's last state as Slurm says it (`state`), or "" when the
    script did not get as far; `over` once Slurm says the job has ended."""

    state: str
    over: bool
    error: FarError | None


async def slurm_cancel(
    transport: Transport, run_dir: str, run_id: str, grace: float
) -> JobCancelled:
    done = await transport.run(
        "slurm_cancel", [run_dir, run_id, str(round(grace))], timeout=grace + 120
    )
    lines = Lines(done.stdout)
    return JobCancelled(
        state=lines.value("stop") or "",
        over=done.returncode == Exit.OK and "stop" in lines,
        error=lines.error(),
        exit=done.returncode,
        error_text=done.error_text,
    )


class ClusterRows(Answer, frozen=True, kw_only=True):
    """slurm_preflight.sh's lines by key, for rtrain.daemon.slurm.cluster_report to read."""

    rows: dict[str, list[list[str]]]


async def slurm_preflight(transport: Transport, workdir: str, partition: str | None) -> ClusterRows:
    args = [workdir, partition] if partition else [workdir]
    done = await transport.run("slurm_preflight", args, timeout=60)
    lines = Lines(done.stdout)
    keys = ("tool", "node", "default_partition", "accounting", "limit", "workdir")
    return ClusterRows(
        rows={key: lines.rows(key) for key in keys},
        exit=done.returncode,
        error_text=done.error_text,
    )


# ---- transfers: the input cache, pieces, file states (daemon/transfer/) -------------------


class Placed(msgspec.Struct, frozen=True, kw_only=True):
    """cache_place.sh's answer: each input placed from the cache (name -> `copied`: the
    run's own copy or reflink), and for each other one the offsets of the pieces a cut
    upload left verified."""

    placed: dict[str, str]
    pieces: dict[str, set[int]]
    error: FarError | None
    exit: int
    error_text: str

    @property
    def ok(self) -> bool:
        return self.exit == Exit.OK and self.error is None


async def cache_place(
    transport: Transport, workdir: str, run_dir: str, inputs: Sequence[tuple[str, int, str]]
) -> Placed:
    """Place every input (sha256, size, name) the host's cache holds into `run_dir`; the list
    travels on stdin, a line each."""
    listing = "".join(f"{sha}\t{size}\t{name}\n" for sha, size, name in inputs)
    done = await transport.run(
        "cache_place", [workdir, run_dir], stdin=listing.encode(), timeout=120
    )
    lines = Lines(done.stdout)
    pieces: dict[str, set[int]] = {}
    for row in lines.rows("piece"):
        offset = _int(row[1]) if len(row) >= 3 else None
        if offset is not None:
            pieces.setdefault(row[0], set()).add(offset)
    return Placed(
        placed={row[0]: row[1] for row in lines.rows("placed") if len(row) >= 2},
        pieces=pieces,
        error=lines.error(),
        exit=done.returncode,
        error_text=done.error_text,
    )


class Stored(msgspec.Struct, frozen=True, kw_only=True):
    """put_range.sh's or seal_input.sh's answer: the piece kept, the input placed (`linked`,
    `copied`), the bytes not the expected ones (`mismatch`), or why not (`error`)."""

    piece: bool
    placed: str | None
    mismatch: bool
    error: FarError | None
    exit: int
    error_text: str

    @property
    def ok(self) -> bool:
        return self.exit == Exit.OK and self.error is None and not self.mismatch


def stored(done: Completed) -> Stored:
    lines = Lines(done.stdout)
    placed = lines.last("placed")
    error = lines.error()
    said_mismatch = error is not None and error.word == ErrorWord.MISMATCH
    return Stored(
        piece="piece" in lines,
        placed=placed[1] if placed and len(placed) >= 2 else None,
        mismatch="mismatch" in lines or said_mismatch,
        error=None if said_mismatch else error,
        exit=done.returncode,
        error_text=done.error_text,
    )


async def seal_input(
    transport: Transport, workdir: str, sha: str, size: int, run_dir: str, name: str, timeout: float
) -> Stored:
    done = await transport.run(
        "seal_input", [workdir, sha, str(size), run_dir, name], timeout=timeout
    )
    return stored(done)


class FileState(msgspec.Struct, frozen=True, kw_only=True):
    """file_state.sh's answer: the file's size and state line (device, inode, size, mtime),
    with `sha256` its whole hash if asked for; `changed` when it moved while hashed."""

    size: int | None
    state: str | None
    sha256: str | None
    changed: bool
    error: FarError | None
    exit: int
    error_text: str


async def file_state(
    transport: Transport, run_dir: str, rel: str, *, hashed: bool = False, timeout: float = 60
) -> FileState:
    args = [run_dir, rel, "sha256"] if hashed else [run_dir, rel]
    done = await transport.run("file_state", args, timeout=timeout)
    lines = Lines(done.stdout)
    state = lines.last("state")
    error = lines.error()
    return FileState(
        size=_int(state[0]) if state else None,
        state="\t".join(state[1:]) if state and len(state) > 1 else None,
        sha256=lines.value("sha256"),
        changed=error is not None and error.word == ErrorWord.CHANGED,
        error=error,
        exit=done.returncode,
        error_text=done.error_text,
    )


class TreeSent(msgspec.Struct, frozen=True, kw_only=True):
    """send_tree.sh's verdict on stderr: per file, in the order asked, whether it is the
    bytes sent (its states before and after agree) and their far sha256; `count` None when
    the script never got to the end (then no file is vouched for)."""

    held: list[bool]
    sizes: list[int | None]  # each file's size when it was read, by its state
    sha256: list[str]
    count: int | None
    error: list[str] | None


def tree_sent(done: Completed) -> TreeSent:
    lines = Lines(done.stderr)
    before = [" ".join(row) for row in lines.rows("state")]
    after = [" ".join(row) for row in lines.rows("after")]
    digests = [row[0] if row else "" for row in lines.rows("sha256")]
    count = _int(lines.value("sent"))
    if (
        done.returncode != Exit.OK
        or count is None
        or not (len(before) == len(after) == len(digests) == count)
    ):
        return TreeSent(held=[], sizes=[], sha256=[], count=None, error=lines.last("error"))
    held = [a == b and a != "-" for a, b in zip(before, after, strict=True)]
    # file_state: device, inode, size, mtime.
    sizes = [_int(state.split(" ")[2]) if state.count(" ") >= 2 else None for state in before]
    return TreeSent(held=held, sizes=sizes, sha256=digests, count=count, error=None)


def range_sent(done: Completed) -> Sent:
    """send_range.sh's verdict on stderr: as send.sh's."""
    return sent(done)


def failed_read(done: Completed) -> FarError | None:
    """The `error` line a script printed before sending any byte (a refused path)."""
    return far_error(Lines(done.stdout).last("error") or Lines(done.stderr).last("error"))


class Collected(msgspec.Struct, frozen=True, kw_only=True):
    """gc_cache.sh's `freed BYTES ENTRIES PARTIALS`; None values when it did not say."""

    freed_bytes: int | None
    entries: int | None
    partials: int | None
    exit: int
    error_text: str

    @property
    def ok(self) -> bool:
        return self.exit == Exit.OK and None not in (self.freed_bytes, self.entries, self.partials)


async def gc_cache(transport: Transport, workdir: str) -> Collected:
    done = await transport.run("gc_cache", [workdir], timeout=600)
    freed = (Lines(done.stdout).last("freed") or []) + [""] * 3
    return Collected(
        freed_bytes=_int(freed[0]),
        entries=_int(freed[1]),
        partials=_int(freed[2]),
        exit=done.returncode,
        error_text=done.error_text,
    )


# ---- guard.sh, guard_loop.sh's one-shot modes, lease.sh -----------------------------------


class GuardSeen(msgspec.Struct, frozen=True, kw_only=True):
    """The guard's last look at the host (host clock): idle since `idle_since`, or busy
    because of `reason`."""

    busy: bool
    checked_at: float
    idle_since: float | None
    reason: str | None


class GuardFiring(msgspec.Struct, frozen=True, kw_only=True):
    """The guard's last run of its command: when it ended, its exit status, and the idle
    period it was for (host clock)."""

    at: float
    exit_code: int | None
    idle_since: float | None


class GuardShown(Answer, frozen=True, kw_only=True):
    """guard.sh's `show` (also the answer of `arm` and `off`). `now` is the host's clock, so
    the daemon can read the host's times against its own."""

    armed: bool
    pid: int | None
    idle_seconds: int | None
    ignore_sessions: bool | None
    # A stalled run counts as idle (the host opted in).
    stalled_idle: bool | None
    # Flattened (line breaks as spaces): for showing, not for running.
    command: str | None
    seen: GuardSeen | None
    last: GuardFiring | None
    now: float | None
    error: FarError | None

    @property
    def ok(self) -> bool:
        return self.exit == Exit.OK and self.now is not None


def _guard_shown(done: Completed) -> GuardShown:
    lines = Lines(done.stdout)
    settings = lines.last("settings") or []
    seen = lines.last("seen")
    last = lines.last("last")
    seen_row = None
    if seen and len(seen) >= 3 and seen[0] in ("idle", "busy") and _float(seen[1]) is not None:
        busy = seen[0] == "busy"
        seen_row = GuardSeen(
            busy=busy,
            checked_at=_float(seen[1]) or 0.0,
            idle_since=None if busy else _float(seen[2]),
            reason=seen[2] if busy else None,
        )
    last_row = None
    if last and _float(last[0]) is not None:
        last_row = GuardFiring(
            at=_float(last[0]) or 0.0,
            exit_code=_int(last[1]) if len(last) > 1 else None,
            idle_since=_float(last[2]) if len(last) > 2 else None,
        )
    return GuardShown(
        armed=lines.value("guard") == "armed",
        pid=_int(lines.value("pid")),
        idle_seconds=_int(settings[0]) if settings else None,
        ignore_sessions=settings[1] == "1" if len(settings) > 1 else None,
        stalled_idle=settings[2] == "1" if len(settings) > 2 else None,
        command=lines.value("command"),
        seen=seen_row,
        last=last_row,
        now=_float(lines.value("now")),
        error=lines.error(),
        exit=done.returncode,
        error_text=done.error_text,
    )


async def guard_show(transport: Transport, workdir: str) -> GuardShown:
    done = await transport.run("guard", [workdir, "show"], timeout=60)
    return _guard_shown(done)


async def guard_arm(
    transport: Transport,
    workdir: str,
    idle_seconds: int,
    ignore_sessions: bool,
    command: str,
    stalled_idle: bool = False,
) -> GuardShown:
    """(Re)arm the guard of `workdir`; its loop's text (common.sh + guard_loop.sh) goes on
    stdin, so nothing of rtrain has to be installed on the host."""
    flags = ["1" if ignore_sessions else "0", command, "1" if stalled_idle else "0"]
    done = await transport.run(
        "guard",
        [workdir, "arm", str(idle_seconds), *flags],
        stdin=script("guard_loop").encode(),
        timeout=60,
    )
    return _guard_shown(done)


async def guard_off(transport: Transport, workdir: str) -> GuardShown:
    done = await transport.run("guard", [workdir, "off"], timeout=60)
    return _guard_shown(done)


class HostLook(Answer, frozen=True, kw_only=True):
    """The guard's look, taken now: `busy` says why the host is not idle; None when it is."""

    busy: str | None

    @property
    def ok(self) -> bool:
        return self.exit == Exit.OK


async def host_look(transport: Transport, workdir: str, ignore_sessions: bool) -> HostLook:
    done = await transport.run(
        "guard_loop", [workdir, "look", "1" if ignore_sessions else "0"], timeout=60
    )
    lines = Lines(done.stdout)
    busy = lines.value("busy")
    if done.returncode == Exit.OK and busy is None and "idle" not in lines:
        # Anything the guard cannot tell counts as busy, never as idle.
        busy = "the host did not say whether it is idle"
    return HostLook(busy=busy, exit=done.returncode, error_text=done.error_text)


class Terminated(Answer, frozen=True, kw_only=True):
    """guard_loop.sh's `terminate`: refused (`busy`, the reason), no command to run
    (`no_command`), or the command started (`started_at`, host clock) and then ended
    (`exit_code`, the last lines of its `output`) or still `running` after the wait."""

    busy: str | None
    no_command: bool
    started_at: float | None
    # What it ran, flattened (line breaks as spaces).
    command: str | None
    exit_code: int | None
    output: list[str]
    running: bool
    error: FarError | None


async def terminate(
    transport: Transport, workdir: str, command: str | None, *, force: bool, wait: int
) -> Terminated:
    """Run the host's terminate command now (`command`, else the one the guard was armed
    with), unless a run or a transfer keeps the host busy and not `force`."""
    args = [workdir, "terminate", "1" if force else "0", str(wait)]
    args += ["given", command] if command is not None else ["armed"]
    done = await transport.run("guard_loop", args, timeout=wait + 60)
    lines = Lines(done.stdout)
    error = lines.error()
    started = lines.value("started")
    return Terminated(
        busy=error.arg or None if error and error.word == ErrorWord.BUSY else None,
        no_command=_said(lines, ErrorWord.NO_COMMAND),
        started_at=_float(started),
        command=lines.value("command"),
        exit_code=_int(lines.value("exit")),
        output=[row[0] if row else "" for row in lines.rows("output")],
        running="running" in lines,
        error=error,
        exit=done.returncode,
        error_text=done.error_text,
    )


class Leased(Answer, frozen=True, kw_only=True):
    """lease.sh: the lease holds until `expires_at` (host clock), or was `dropped`."""

    expires_at: float | None
    dropped: bool

    @property
    def ok(self) -> bool:
        return self.exit == Exit.OK and (self.expires_at is not None or self.dropped)


async def lease(transport: Transport, workdir: str, token: str, seconds: int) -> Leased:
    """Take or renew the transfer lease `token` for `seconds`; 0 drops it."""
    done = await transport.run("lease", [workdir, token, str(seconds)], timeout=30)
    lines = Lines(done.stdout)
    held = lines.last("lease")
    return Leased(
        expires_at=_float(held[1]) if held and len(held) > 1 else None,
        dropped="dropped" in lines,
        exit=done.returncode,
        error_text=done.error_text,
    )
