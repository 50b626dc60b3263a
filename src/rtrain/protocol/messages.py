"""Every message rtrain sends or receives, as msgspec Structs (camelCase on the wire).

Params forbid unknown fields, so a typo is an error (-32602) rather than silently ignored.
Results tolerate unknown fields, so an older client can read a newer daemon's answers.
The published JSON Schema (docs/protocol.schema.json) is generated from these classes.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from .launcher_options import (
    LauncherOptions as LauncherOptions,  # a start's launcher
)
from .launcher_words import Launcher as Launcher  # what a start may ask for
from .launcher_words import RunLauncher as RunLauncher  # what a run records
from .run_states import Ending as Ending  # how a run ended, typed
from .run_states import RetryOn as RetryOn  # which ends a retry follows
from .run_states import RunState as RunState  # the wire type of a run's state

Transport = Literal["exec", "console", "local"]
ConnectionState = Literal["connected", "connecting", "disconnected", "failed"]
# What a run's limits do when it stalls: flag it (`stalledSince`), or stop it as well.
OnStall = Literal["flag", "stop"]
# Which of a run's limits stopped it.
StoppedBy = Literal["max_duration", "stall"]
# A limit in whole seconds: 0 turns it off; at most a year (protocol/durations.py).
LimitSeconds = Annotated[int, msgspec.Meta(ge=0, le=365 * 86400)]
# GPUs a run asks for per node (0: none), and the nodes of a batch job: a bad count is
# refused as invalid params before anything reaches a host.
GpuCount = Annotated[int, msgspec.Meta(ge=0, le=4096)]
RetryCount = Annotated[int, msgspec.Meta(ge=0, le=100)]
NodeIndex = Annotated[int, msgspec.Meta(ge=0, le=4095)]
# A run's place in its pool's queue: higher goes first (docs/pools.md).
Priority = Annotated[int, msgspec.Meta(ge=-1000, le=1000)]

DEFAULT_WORKDIR = "~/.rtrain"
DEFAULT_PYTHON = "python3"


class Params(msgspec.Struct, rename="camel", forbid_unknown_fields=True, omit_defaults=True):
    """Base of request/notification params."""


class Result(msgspec.Struct, rename="camel", omit_defaults=True):
    """Base of results and server-sent notification payloads."""


# ---- lifecycle -------------------------------------------------------------------------


class ClientInfo(Result):
    name: str
    version: str | None = None


class InitializeParams(msgspec.Struct, rename="camel", omit_defaults=True):
    """The one params type that tolerates unknown fields: generic LSP clients send theirs
    (`rootUri`, `capabilities`, `locale`, ...). No `protocolVersion` means the daemon's own."""

    protocol_version: str | None = None
    client_info: ClientInfo | None = None
    process_id: int | None = None


class ServerInfo(Result):
    name: str
    version: str


class ServerCapabilities(Result):
    methods: list[str]
    notifications: list[str]


class InitializeResult(Result):
    protocol_version: str
    server_info: ServerInfo
    capabilities: ServerCapabilities
    # What went wrong as the daemon started (a damaged registry moved aside, a config file
    # it could not use): sentences for a person, given to the first client only.
    notices: list[str] = []
    # The settings the daemon read from its environment at start, NAME -> value (see
    # `daemon_process.SETTINGS`), so a client can say when its own differ.
    settings: dict[str, str] = {}


class Empty(Params):
    """No parameters."""


class CancelParams(Params):
    id: int | str


class ProgressValue(Result):
    """LSP's work-done progress (`begin`, `report`, `end`), plus rtrain's byte counts.

    `percentage` is 0-100, from the byte counts when the total is known.
    """

    kind: Literal["begin", "report", "end"]
    title: str | None = None
    message: str | None = None
    percentage: int | None = None
    done_bytes: int | None = None
    total_bytes: int | None = None
    done_files: int | None = None
    total_files: int | None = None


class ProgressParams(Result):
    """`$/progress`, in LSP's shape: the long operation that passed `progressToken`."""

    token: str | int
    value: ProgressValue


def byte_progress(
    token: str | int,
    kind: Literal["begin", "report", "end"],
    title: str,
    done_bytes: int,
    total_bytes: int,
    message: str | None = None,
    files: tuple[int, int] | None = None,
) -> ProgressParams:
    """`$/progress` for a transfer of `total_bytes`, `done_bytes` of them done (and of
    `files`: done, total)."""
    percentage = min(100, done_bytes * 100 // total_bytes) if total_bytes else None
    return ProgressParams(
        token=token,
        value=ProgressValue(
            kind=kind,
            title=title,
            message=message,
            percentage=percentage,
            done_bytes=done_bytes,
            total_bytes=total_bytes,
            done_files=files[0] if files else None,
            total_files=files[1] if files else None,
        ),
    )


# ---- metrics and GPUs ------------------------------------------------------------------


class Progress(Result):
    """Where a run's progress bar stands (tqdm's `n/total [elapsed<remaining, rate]`)."""

    n: float
    total: float | None = None
    percent: float | None = None
    rate: float | None = None  # items per second
    eta: float | None = None  # seconds left, as the bar estimated
    elapsed: float | None = None  # seconds, as the bar counted


class GpuProcess(Result):
    """A compute process on a GPU; `runId` when it belongs to a run rtrain watches."""

    pid: int
    used_memory_mib: float | None = None
    name: str | None = None
    run_id: str | None = None


class GpuStat(Result):
    """One GPU as nvidia-smi reported it; a field it answered `[N/A]` or `[Not Supported]`
    for is left out."""

    index: int
    name: str | None = None
    uuid: str | None = None
    utilization: float | None = None  # percent
    memory_used_mib: float | None = None
    memory_total_mib: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    processes: list[GpuProcess] = []


class GpuSample(Result):
    """A host's GPUs at one poll (`time`: epoch seconds)."""

    time: float
    gpus: list[GpuStat]


class Series(Result):
    """One metric of a run: `values[i]` at `steps[i]`; null where the log said NaN or inf."""

    name: str
    steps: list[float]
    values: list[float | None]


# ---- runs ------------------------------------------------------------------------------


class Attempt(Result):
    """One launch of a run's command; `restart` adds one. Times are epoch seconds; `endedAt`
    is when the daemon first saw the attempt over."""

    number: int
    state: RunState
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    reason: str | None = None
    # When the daemon first saw the attempt running (after any wait for GPUs): the start of
    # its billed time.
    running_at: float | None = None
    # Why this attempt was started: null for the first (`start`) and for `restart`;
    # `retry: ...` for one the daemon started itself after the last one ended lost.
    cause: str | None = None


# `waiting`: for the run to end (or, before terminating, for the host's other work);
# `done` and `failed` are final, and `detail` says what happened.
AfterRunStage = Literal["waiting", "fetching", "terminating", "done", "failed"]


class AfterRun(Result):
    """What the daemon does once the run completes (`start --then-fetch/--then-terminate`):
    fetch `fetch` into the local directory `into`, verified, and only then, when `terminate`,
    run the host's terminate command. Nothing is terminated after a run that did not
    complete or a fetch that failed."""

    fetch: str | None = None
    into: str | None = None
    terminate: bool = False
    stage: AfterRunStage = "waiting"
    # The latest word: what it waits for, what was fetched, why nothing was terminated.
    detail: str | None = None
    fetched_files: int | None = None
    fetched_bytes: int | None = None
    terminated_at: float | None = None


# A TCP port number (1-65535).
Port = Annotated[int, msgspec.Meta(ge=1, le=65535)]

# The trackers whose files a run's `sync` brings home while it trains (docs/trackers.md).
SyncTracker = Literal["mlflow", "wandb"]


class TrackerSync(Result):
    """How a run's tracker files last reached this machine's tracker."""

    tracker: SyncTracker
    # Epoch seconds of the last sync that succeeded (null: none yet).
    synced_at: float | None = None
    # Why the latest one failed (null once one succeeds again).
    error: str | None = None
    # What the latest one brought: e.g. `3 metric points, 1 run`.
    summary: str | None = None
    # The run has ended and its last sync is made: nothing more comes (until a restart).
    done: bool = False


class RunInfo(Result):
    """What rtrain knows of one run. `state` is as of `lastSeen` (epoch seconds)."""

    host: str
    run_id: str
    state: RunState
    remote_dir: str | None = None
    log_path: str | None = None
    workdir: str | None = None
    command: list[str] | None = None
    exit_code: int | None = None
    signal: int | None = None
    created_at: float | None = None
    started_at: float | None = None
    last_seen: float | None = None
    reason: str | None = None
    # Read from the run's log and metrics.jsonl while it runs (docs/metrics.md).
    progress: Progress | None = None
    latest: dict[str, float | None] | None = None
    # Indices of the GPUs the run's processes use, where nvidia-smi tells.
    gpus: list[int] | None = None
    # Non-secret variables the trainer (and its setup step) got, NAME -> value.
    env: dict[str, str] = {}
    setup: str | None = None
    # Every attempt, the latest last; the fields above describe the latest one.
    attempts: list[Attempt] = []
    # A batch job's id (Slurm), and the scheduler's own name for its state where it says
    # more than `state`: `failed` + TIMEOUT, `stopped` + CANCELLED, `lost` + NODE_FAIL.
    job_id: str | None = None
    scheduler_state: str | None = None
    # The run's limits, in seconds (null: none), kept by the host itself (docs/cost-safety.md).
    max_duration: int | None = None
    stall_after: int | None = None
    on_stall: OnStall | None = None
    # While it runs: since when (epoch seconds) its log has been still and its GPUs idle.
    stalled_since: float | None = None
    # While it runs: when (epoch seconds) its train.log last changed, as of the last read.
    last_output_at: float | None = None
    # A run one of its limits stopped (`state` stopped; `reason` says which, in words).
    stopped_by: StoppedBy | None = None
    # How it ended (null while not ended): `completed`, `exited` (failed by its own exit or
    # its scheduler), `stopped`, `max_duration`, `stall`, `vanished` (lost), `never_launched`
    # (lost); each with its state and whether a retry starts it again (docs/architecture.md).
    ending: Ending | None = None
    # What it has cost so far: its billed seconds (each attempt from its launch, or from the
    # end of its wait for GPUs, to its end or now) times the host's price per hour.
    billed_seconds: float | None = None
    price_per_hour: float | None = None
    cost: float | None = None
    # What happens once the run completes, and how far it got.
    after: AfterRun | None = None
    # How it was launched; every later operation on it uses the same launcher, whatever
    # config.toml says now (null: a run of an older rtrain, whose host's config decides).
    launcher: RunLauncher | None = None
    # A run across hosts: every node, node 0 (`host`, where the run is recorded) first.
    nodes: list[RunNode] = []
    # Attempts the daemon may still start by itself after the run ends lost (or failed, when
    # `retryOn` is `failed`); null: none.
    retry: RetryPolicy | None = None
    # The pool it was started in (`@NAME`), placed on `host` or still queued there.
    pool: str | None = None
    # Where its pool placed it and why (`placed on box2: 2 of 8 GPUs free, inputs cached`),
    # also for a run that waited in the queue, whose start returned before it was placed.
    placement: str | None = None
    # The sweep it belongs to, and its parameters there (`rtrain sweep`).
    sweep: str | None = None
    params: dict[str, str] = {}
    # Its tracker files synced to this machine's trackers (`sync` at start), and how far.
    synced: list[TrackerSync] = []


class RunNode(Result):
    """One node of a run across hosts: its host and the run directory there."""

    host: str
    remote_dir: str
    # The python this node runs torchrun with: `--python`, else its host's own `python` in
    # config.toml, as the start chose it (null: a run of an older rtrain, node 0's).
    python: str | None = None


class RetryPolicy(Result):
    """`rtrain start --retry N [--retry-on failed]`: up to `limit` more attempts, each from
    the run's recorded command in its own directory, after `backoff` seconds (doubling)."""

    limit: int
    on: RetryOn = "lost"
    used: int = 0
    backoff: float = 5.0


class GpuInfo(Result):
    index: int
    name: str
    memory_mib: int | None = None
    memory_used_mib: int | None = None
    utilization_percent: int | None = None
    uuid: str | None = None
    # `runId` None: not rtrain's, or another user's process whose environment is unreadable.
    processes: list[GpuProcess] = []
    # A process that is not rtrain's holds this GPU now.
    in_use_by_other: bool = False


class PreflightParams(Params):
    """`python` and `workdir` left out take the host's defaults from the user config."""

    host: str
    # Slurm hosts: the partition to check (default: the host's, else the cluster's).
    partition: str | None = None
    gpus: GpuCount = 1
    python: str | None = None
    workdir: str | None = None
    # Requirement strings (`transformers>=5`, `peft`) the chosen python must satisfy.
    requires: list[str] = []
    # Local files or directories `start` would ship; their size is checked against the disk.
    inputs: list[str] = []
    # The config and the code directory as start takes them (the code with its ignore rules,
    # `include` and `followLinks`), so that what preflight counts is what start ships.
    config: str | None = None
    code: str | None = None
    include: list[str] = []
    follow_links: bool = False
    # Hugging Face model ids (`ORG/NAME`) the host must be able to download.
    hf_models: list[str] = []
    # NAME -> value, as for run/start; HF_TOKEN is the token the Hub checks try.
    secrets: dict[str, str] = {}
    # A pip requirements file (absolute local path): its environment is built on the host
    # now, as a start would build it, or found built (docs/environments.md).
    requirements: str | None = None
    # `$/progress` of that build (how long so far) goes to this token while it runs.
    progress_token: str | int | None = None
    # A container image: which runtime the host has, whether the image is in its store and
    # how many GPUs it sees (docs/containers.md). null: config.toml's `image`; "" for none.
    image: str | None = None


class TorchInfo(Result):
    version: str
    # The CUDA version torch was built for; None for a CPU-only build.
    cuda: str | None = None
    cuda_available: bool | None = None
    device_count: int | None = None


class PythonCandidate(Result):
    """Another interpreter found on the host, and what it can do."""

    path: str
    usable: bool
    version: str | None = None
    executable: str | None = None
    torch: TorchInfo | None = None
    error: str | None = None


class DriverInfo(Result):
    version: str | None = None
    # The newest CUDA the driver supports (nvidia-smi's "CUDA Version").
    cuda_version: str | None = None


class PackageCheck(Result):
    requirement: str
    name: str
    ok: bool
    # The installed version; None when it is not installed (or could not be read).
    installed: str | None = None
    problem: str | None = None
    fix: str | None = None


class DiskCheck(Result):
    free_bytes: int
    ship_bytes: int
    margin_bytes: int
    ok: bool


HubVerdict = Literal[
    "ok", "no_token", "not_granted", "token_scope", "not_found", "unreachable", "error"
]


class HubAccess(Result):
    """Whether the host can download one Hugging Face model."""

    model: str
    ok: bool
    verdict: HubVerdict
    message: str
    status: int | None = None
    error_code: str | None = None
    endpoint: str | None = None
    # Where the token tried came from: "secret", "host environment", "host token file", "none".
    token_source: str | None = None


FindingLevel = Literal["ok", "info", "warning", "problem"]


class Finding(Result):
    """One line of the verdict as every client shows it: what was checked, and the result."""

    topic: str
    text: str
    level: FindingLevel = "ok"


class PartitionInfo(Result):
    """A Slurm partition: whether it takes jobs, and its GPUs (gres/gpu) in all and free."""

    name: str
    up: bool
    nodes: int
    gpus: int
    free_gpus: int
    default: bool = False


class SlurmFindings(Result):
    """What a Slurm login node offers the run (preflight on a `scheduler = "slurm"` host)."""

    partition: str | None
    partition_up: bool
    # GPUs (gres/gpu) on the partition's biggest node, and free now over all its nodes.
    gpus: int
    free_gpus: int
    accounting: bool
    accounting_error: str | None = None
    # The user's association limits as sacctmgr shows them (`MaxTRES=gres/gpu=4`, ...).
    limits: list[str] = []
    partitions: list[PartitionInfo] = []


class PreflightResult(Result):
    host: str
    ok: bool
    reasons: list[str]
    transport: Transport | None = None
    python_version: str | None = None
    gpus: list[GpuInfo] = []
    workdir: str | None = None
    free_disk_bytes: int | None = None
    torch_version: str | None = None
    cuda_version: str | None = None
    findings: list[Finding] = []
    python_executable: str | None = None
    torch: TorchInfo | None = None
    python_candidates: list[PythonCandidate] = []
    # An interpreter of the host to use instead of the requested one, when there is a better.
    suggested_python: str | None = None
    driver: DriverInfo | None = None
    # Of `gpus`, those no other process uses and no rtrain run of `workdir` holds now.
    gpus_free: int | None = None
    packages: list[PackageCheck] = []
    disk: DiskCheck | None = None
    hugging_face: list[HubAccess] = []
    # What the login shell printed to stdout around the command (a noisy ~/.bashrc).
    shell_noise: str | None = None
    slurm: SlurmFindings | None = None


class StartParams(Params):
    """Local paths are absolute (the daemon does not share the client's working directory).
    `python`, `workdir`, `env`, `setup` and `code` left out take the host's defaults from the
    user config (`[hosts.ALIAS]`), then rtrain's own. `host` `@NAME` places the run on a host
    of the pool `[pools.NAME]` that can give it `gpus` now, else queues it (docs/pools.md)."""

    host: str
    # Shipped as config.yaml; optional when a command of the user's own is given (then
    # `{config}` in it is refused without one). The demo trainer needs it.
    config: str | None = None
    # A file or a directory, shipped under its base name; `datasets` may name more.
    dataset: str | None = None
    datasets: list[str] = []
    # A directory whose contents land in the run directory (.rtrainignore, else .gitignore).
    code: str | None = None
    run_id: str | None = None
    gpus: GpuCount = 1
    python: str | None = None
    workdir: str | None = None
    # argv template; `{python}`, `{config}`, `{dataset}`, `{run_dir}`, `{gpus}` are filled in,
    # and the word `{torchrun}` becomes the run's python running torchrun for `gpus` ranks.
    command: list[str] | None = None
    # How the run is run, with that launcher's own options (launcher_options.py); null:
    # as the host's config.toml says (`torchrun` when the command has `{torchrun}`).
    launcher: LauncherOptions | None = None
    # Too few GPUs free: queue the run on the host (state `queued`) instead of refusing it.
    wait: bool = False
    # Count GPUs busy with processes that are not rtrain runs as free.
    share_gpus: bool = False
    # Non-secret environment for the setup step and the trainer; recorded in meta.json.
    env: dict[str, str] = {}
    # A shell command run in the run directory before the trainer (placeholders filled in).
    setup: str | None = None
    # Environment for the trainer, NAME -> value; never put on a command line or in a file.
    secrets: dict[str, str] = {}
    progress_token: str | int | None = None
    # Attempts the daemon starts by itself after the run ends lost (null: the host's
    # config.toml `retry`, else none), and whether a failure with its own exit code counts.
    retry: RetryCount | None = None
    retry_on: RetryOn | None = None
    # Limits, in seconds; null: the host's (config.toml), else none for `maxDuration` and
    # 1800 for `stallAfter`; 0 turns one off. A run past `maxDuration` is stopped as
    # `run/stop` with `force` would (on Slurm it becomes the job's --time); a run whose log
    # stays still `stallAfter` with its GPUs idle is flagged stalled, and with `onStall`
    # `stop` stopped.
    max_duration: LimitSeconds | None = None
    stall_after: LimitSeconds | None = None
    on_stall: OnStall | None = None
    # Once the run completes: fetch this path of the run into `thenFetchInto` (an absolute
    # local directory), then, with `thenTerminate`, run the host's terminate command.
    then_fetch: str | None = None
    then_fetch_into: str | None = None
    then_terminate: bool = False
    # Trackers whose files the daemon brings home while the run trains and at its end, into
    # this machine's tracker (`mlflow`: the run's mlruns/ into MLFLOW_TRACKING_URI here;
    # `wandb`: its offline runs, wandb/offline-run-*, with `wandb sync` and this machine's
    # W&B login).
    sync: list[SyncTracker] = []
    # Where `mlflow`'s synced files go here: MLflow's tracking URI (the CLI and the API send
    # their own MLFLOW_TRACKING_URI); null: MLflow's default for the daemon.
    sync_to: str | None = None
    # Ports of this machine's 127.0.0.1 the run's processes reach on the host's 127.0.0.1
    # (at the same number where it is free there), from before its trainer starts until it
    # ends; every later attempt (`run/restart`, a retry) gets them again (docs/trackers.md).
    reverse: list[Port] = []
    # Patterns (gitignore syntax) of the code directory shipped although its ignore rules
    # leave them home; and whether links that leave the code directory ship what they point
    # to (else they ship as links).
    include: list[str] = []
    follow_links: bool = False
    # A run started in a pool (`host` `@NAME`) that must wait goes before those of a lower
    # priority, first come first served within one.
    priority: Priority = 0
    # One point of a sweep (`rtrain sweep`); only in a pool.
    sweep: SweepPoint | None = None
    # A pip requirements file (absolute local path): the run's python is a virtual environment
    # built from it once per host and reused (docs/environments.md). null: the host's
    # config.toml `requirements`, else `requirements.txt` at the top of `code`; "" for none.
    requirements: str | None = None
    # A container image: the setup and the trainer run inside it, in the host's container
    # runtime (docs/containers.md). null: config.toml's `image`; "" for none.
    image: str | None = None


class SweepPoint(Params):
    """A run of a sweep: the sweep's name, this run's parameters (recorded with it), and
    how many runs of the sweep may be placed at once (null: as many as GPUs allow)."""

    # Its runs are NAME-1, NAME-2, ...: a name that makes run ids, as `runId` is judged.
    name: str
    params: dict[str, str] = {}
    max_parallel: Annotated[int, msgspec.Meta(ge=1, le=4096)] | None = None


class ShippedFile(Result):
    """One file that landed in the run directory, verified by its sha256 there. `how`:
    `sent` (`sentBytes` went over the wire), or placed from the host's cache of inputs
    (`linked`, `copied`: nothing sent)."""

    path: str
    size: int
    sha256: str
    sent_bytes: int = 0
    how: Literal["sent", "linked", "copied"] = "sent"


class LeftHomePath(Result):
    """A path of the code directory that its ignore rules kept home (a directory's ends in
    `/`): the rule that matched, as written, and the files and bytes under it (`atLeast`: a
    big directory was counted in part)."""

    path: str
    rule: str
    files: int
    size: int
    at_least: bool = False


class ShippedLink(Result):
    """A symbolic link of the code directory shipped as a link; `outside`: its target is
    not in the code directory (what it points to stayed home)."""

    path: str
    target: str
    outside: bool = False


class CodeReport(Result):
    """What `code` left home and why (`rules`: the ignore file read; `leftHome` lists the
    first paths, the totals count all), the links shipped as links, and the shipped files
    whose names look like secrets that no ignore or include rule names."""

    rules: str | None = None
    left_home: list[LeftHomePath] = []
    left_home_files: int = 0
    left_home_bytes: int = 0
    links: list[ShippedLink] = []
    secrets: list[str] = []


class StartResult(Result):
    run: RunInfo
    # A run started in a pool: where it went and why (`placed on box2: 2 of 8 GPUs free,
    # inputs cached`); a run queued in its pool has `run.host` `@NAME` and `run.reason`.
    placement: str | None = None
    pid: int | None = None
    # Bytes that went over the wire (an input the host already held costs none).
    uploaded_bytes: int = 0
    shipped: list[ShippedFile] = []
    code: CodeReport | None = None


class RunRef(Params):
    """A run addressed by host + run id alone; `workdir` only when it is not the default."""

    host: str
    run_id: str
    workdir: str | None = None


class TailParams(Params):
    host: str
    run_id: str
    workdir: str | None = None
    offset: int = 0
    follow: bool = True
    # Start this many lines before the end of the log instead of at `offset`.
    lines: Annotated[int, msgspec.Meta(ge=0)] | None = None
    # A run across hosts: node K's log alone (offsets are that log's). Without it, every
    # node's new lines, each behind `[node K] ` (from where each log ends now, or `lines`).
    node: NodeIndex | None = None


class LogChunk(Result):
    """`run/log`: bytes [offset, nextOffset) of the run's log.

    `text` is those bytes as UTF-8. When they are not valid UTF-8, `base64` holds the exact
    bytes and `text` a display form with U+FFFD in place of what does not decode.
    `rotated` is true when the log file was replaced and offsets restarted from 0.
    """

    host: str
    run_id: str
    offset: int
    next_offset: int
    text: str
    rotated: bool = False
    base64: str | None = None


class Reconnecting(Result):
    """`run/reconnecting`: during `run/tail`, the host did not answer and the daemon tries
    again; `attempt` counts from 1. The next `run/log` (or the answer) means it is back."""

    host: str
    run_id: str
    attempt: int
    reason: str


class Waiting(Result):
    """`run/waiting`: during `run/tail`, the run is queued (for free GPUs, or by a
    scheduler), so its log is still to come; `reason` says what it waits for. Sent when the
    tail begins waiting and whenever the reason changes; the next `run/log` means it runs."""

    host: str
    run_id: str
    reason: str


class TailResult(Result):
    run: RunInfo
    offset: int


class StatusResult(Result):
    run: RunInfo


# How `run/wait` ended: the run reached `until`, it ended (its state says how), the wait's
# own `timeout` passed (the run goes on), or the run was removed (`rtrain rm`) meanwhile.
WaitOutcome = Literal["reached", "ended", "timeout", "removed"]


class WaitParams(Params):
    """`run/wait`: answer once the run has ended, or once its state is `until`; with
    `timeout` (seconds), at the latest then. A run whose host does not answer stays
    `unknown` and is waited for: only the host's word ends a wait."""

    host: str
    run_id: str
    workdir: str | None = None
    until: RunState | None = None
    timeout: Annotated[float, msgspec.Meta(gt=0)] | None = None


class WaitResult(Result):
    run: RunInfo
    outcome: WaitOutcome


class ForwardParams(Params):
    """`forwards/open`: listen on 127.0.0.1:`localPort` of this machine (null: the remote
    port's own number where it is free, else any free one) and carry every connection to
    127.0.0.1:`remotePort` on the host, over the host's ssh connection. With `runId`, the
    forward belongs to that run and ends when the run is removed."""

    host: str
    remote_port: Port
    local_port: Port | None = None
    run_id: str | None = None


class ReverseForwardParams(Params):
    """`forwards/reverse`: let processes on the host reach 127.0.0.1:`localPort` of this
    machine at 127.0.0.1:`remotePort` there (null: `localPort`'s own number where it is free
    on the host, else any free one), over the host's ssh connection, set up again whenever
    that connection is. With `runId`, the forward belongs to that run and ends when the run
    ends or is removed."""

    host: str
    local_port: Port
    remote_port: Port | None = None
    run_id: str | None = None


class ForwardInfo(Result):
    host: str
    remote_port: int
    local_port: int
    # Where to point a browser: http://127.0.0.1:LOCAL/; for a reverse forward, the address
    # the host's processes use: http://127.0.0.1:REMOTE/ (on the host).
    url: str
    # Epoch seconds it was opened.
    since: float
    run_id: str | None = None
    # Connections carried now.
    connections: int = 0
    # Why the latest connection could not reach the host (null once one did again); for a
    # reverse forward, why it could not be set up on the host's latest connection.
    last_error: str | None = None
    # The host's processes reach this machine's `localPort` (at `remotePort` there).
    reverse: bool = False


class ForwardsListParams(Params):
    host: str | None = None


class ForwardsListResult(Result):
    forwards: list[ForwardInfo]


class ForwardCloseParams(Params):
    """`forwards/close`: end the forward listening on `localPort`; or every forward to
    `host` (on `remotePort` only, when given); with nothing named, every forward."""

    local_port: Port | None = None
    host: str | None = None
    remote_port: Port | None = None
    # Only reverse forwards (true), only the others (false), or both (null).
    reverse: bool | None = None


class ForwardCloseResult(Result):
    closed: list[ForwardInfo]


class TensorBoardParams(Params):
    """`tensorboard/open`: the host's one TensorBoard also serves this run (its run
    directory, or `logdir` inside it), started with the run's python and forwarded to
    127.0.0.1:`localPort` here (null: its own number where free, else any)."""

    host: str
    run_id: str
    workdir: str | None = None
    logdir: str | None = None
    local_port: Port | None = None


class TensorBoardInfo(Result):
    host: str
    # Where to point a browser: http://127.0.0.1:LOCAL/
    url: str
    local_port: int
    remote_port: int
    # The runs it serves, each under its run id.
    runs: list[str]
    python: str


class TensorBoardStopParams(Params):
    """`tensorboard/stop`: the host's TensorBoard no longer serves `runId` (null: it ends)."""

    host: str
    run_id: str | None = None


class TensorBoardStopResult(Result):
    # What it serves still (null: none runs on the host any more).
    tensorboard: TensorBoardInfo | None = None


class KernelParams(Params):
    """`kernel/open`: without `runId`, start a Jupyter kernel (ipykernel, with `python`) as
    a detached run; with the `runId` of one, reattach to it. Either way its five ports are
    forwarded to this machine and the answer is its connection, this machine's ports in it."""

    host: str
    run_id: str | None = None
    python: str | None = None
    workdir: str | None = None
    gpus: GpuCount = 1
    progress_token: str | int | None = None


class KernelInfo(Result):
    """A Jupyter connection file's fields (ports: this machine's forwards), and the run."""

    host: str
    run_id: str
    shell_port: int
    iopub_port: int
    stdin_port: int
    control_port: int
    hb_port: int
    ip: str
    # Signs every message; never written anywhere but the connection file (0600).
    key: str
    transport: str
    signature_scheme: str
    kernel_name: str = ""
    # True when this request started the kernel; false: reattached.
    started: bool = False


class FetchParams(Params):
    host: str
    run_id: str
    path: str
    dest: str
    workdir: str | None = None
    progress_token: str | int | None = None
    # Fetch every file again, even one already at the destination with the same sha256.
    force: bool = False
    # A run across hosts: fetch from node K's run dir (default: node 0's).
    node: NodeIndex | None = None


class FetchedFile(Result):
    remote_path: str
    local_path: str
    size: int
    sha256: str
    verified: bool


class FetchResult(Result):
    files: list[FetchedFile]
    total_bytes: int
    # Files already at the destination with the same size and sha256: not sent again.
    skipped: int = 0
    # Bytes that went over the wire (less than totalBytes when files were skipped or resumed).
    sent_bytes: int = 0


class GcParams(Params):
    host: str
    # None: the host's configured workdir, else ~/.rtrain.
    workdir: str | None = None


class GcResult(Result):
    host: str
    freed_bytes: int
    entries: int
    partials: int
    # On this machine: the cut fetches from the host whose partial data was swept, and its bytes.
    local_partials: int = 0
    local_freed_bytes: int = 0
    # The run environments no run directory used any more, removed, and what they held
    # (counted in `freedBytes` too).
    environments_removed: int = 0
    environment_bytes: int = 0


class EnvsParams(Params):
    host: str
    # None: the host's configured workdir, else ~/.rtrain.
    workdir: str | None = None


class EnvironmentInfo(Result):
    """One environment cached on the host (docs/environments.md): its key (the lock, the
    python and the platform, hashed), its size, when a run last used it and when it was
    built (epoch seconds, the host's clock), how long the build took and with which tool
    (`uv`, `pip`), the python it was built from, and the runs whose directories use it
    (`usedBy`)."""

    key: str
    size_bytes: int
    last_used: float | None = None
    built_at: float | None = None
    build_seconds: float | None = None
    tool: str | None = None
    python: str | None = None
    used_by: list[str] = []


class EnvsResult(Result):
    host: str
    environments: list[EnvironmentInfo] = []
    # Keys being built right now.
    building: list[str] = []


class GuardParams(Params):
    """`host/guard`: show, arm or disarm the host's guard (one per host and work directory).
    Arming replaces whatever was armed before; `idleSeconds` and `command` left out take the
    host's `idle_stop` and `terminate` from config.toml."""

    host: str
    action: Literal["show", "arm", "off"] = "show"
    # None: the host's configured workdir, else ~/.rtrain.
    workdir: str | None = None
    idle_seconds: Annotated[int, msgspec.Meta(ge=1, le=31536000)] | None = None
    # A shell command, run by `sh -c` on the host (e.g. `runpodctl stop pod $RUNPOD_POD_ID`).
    command: str | None = None
    # Open interactive ssh sessions do not keep the host busy.
    ignore_sessions: bool = False
    # A stalled run (log still, GPUs idle) counts as idle; null: the host's `stalled_idle`.
    stalled_idle: bool | None = None


class GuardFired(Result):
    """The guard's last run of its command: when it ended and its exit status."""

    at: float
    exit_code: int | None = None


class GuardState(Result):
    """A host's guard as it was at `at`. Every time is the daemon's clock (the host's times
    are moved by the difference between the two clocks)."""

    armed: bool
    at: float
    idle_seconds: int | None = None
    command: str | None = None
    ignore_sessions: bool = False
    stalled_idle: bool = False
    # The guard's last look: busy (`busy` says why), or idle since `idleSince`.
    checked_at: float | None = None
    idle_since: float | None = None
    busy: str | None = None
    # When it runs the command if the host stays idle; null while busy, while disarmed, or
    # once it has run it for this idle period.
    acts_at: float | None = None
    last_fired: GuardFired | None = None


class GuardResult(Result):
    host: str
    workdir: str
    guard: GuardState


class TerminateParams(Params):
    """`host/terminate`: run the host's terminate command now (config.toml's `terminate`,
    else the command its guard was armed with)."""

    host: str
    workdir: str | None = None
    # Run it even while a run is running, queued or in setup, or a transfer is in flight.
    force: bool = False


class TerminateResult(Result):
    """`ended`: the command ended (`exitCode`, the last lines of its `output`); `running`: it
    still ran when the daemon stopped waiting; `disconnected`: the connection ended while it
    ran, as it does when the host goes away. The host's guard log keeps the whole story."""

    host: str
    # What it ran; "" when the connection ended before the host said (the guard's command).
    command: str
    source: Literal["config", "guard"]
    outcome: Literal["ended", "running", "disconnected"]
    exit_code: int | None = None
    output: list[str] = []


class StopParams(Params):
    host: str
    run_id: str
    workdir: str | None = None
    force: bool = False
    # Seconds between SIGTERM and the verdict; null: 10, or 35 for a torchrun run (its agent
    # gives the ranks 30 s to end before it kills them).
    grace: float | None = None


class StopResult(Result):
    outcome: Literal["stopped", "not_running"]
    killed: list[int]
    run: RunInfo
    # Attempts the daemon would still have started by itself (`--retry`) once the run was
    # lost, which this stop cancelled.
    retries_cancelled: int = 0


class RestartParams(Params):
    """Start a run's recorded command again in its run directory, as a new attempt; or a new
    command there (`command`, placeholders filled as for run/start), or the recorded one
    with words added (`append`: `--init_from=resume`). The command the attempt ran is the
    one the next restart runs again."""

    host: str
    run_id: str
    workdir: str | None = None
    # Secrets are never stored: a run started with some needs them given again.
    secrets: dict[str, str] = {}
    command: list[str] | None = None
    append: list[str] = []
    # Say what would run (`command`, `attempt`) and start nothing.
    dry_run: bool = False
    # A code directory (absolute local path): its files that differ from what the run was
    # shipped go into the run directory, over the old ones, before the attempt starts.
    code: str | None = None


class RestartResult(Result):
    run: RunInfo
    pid: int | None = None
    # Where the new attempt's part of train.log begins (its marker line).
    log_offset: int = 0
    # The trainer's command of the new attempt (placeholders filled; rtrain's own wrapper
    # words left out), its number, and whether it only was shown (`dryRun`).
    command: list[str] = []
    attempt: int = 0
    setup: str | None = None
    dry_run: bool = False
    # With `code`: the files shipped into the run directory (those that differed). Without
    # it (or on a dry run): the files of the code directory that differ from what the run
    # holds, where the run recorded its code directory and this machine has it.
    code_shipped: list[str] = []
    code_differs: list[str] = []


class RemoveParams(Params):
    host: str
    run_ids: list[str]
    workdir: str | None = None
    # Stop the processes that still run in a run's directory without being part of the run
    # (started there with exec: a TensorBoard), then remove; without it they refuse it.
    force: bool = False


class RemovedRun(Result):
    run_id: str
    remote_dir: str
    # False when the host had no directory left (only the registry's row went).
    had_dir: bool = True


class RemoveResult(Result):
    removed: list[RemovedRun]


class ExecParams(Params):
    """Run `command` (an argv) in the run directory; its output comes back whole."""

    host: str
    run_id: str
    command: list[str]
    workdir: str | None = None
    timeout: Annotated[float, msgspec.Meta(gt=0, le=86400)] = 600.0


class ShellResult(Result):
    """How to open an interactive shell in a run's directory: run `argv` on a terminal, in
    `cwd` when given, and type `typeIn` once the far shell first speaks (a console gateway
    takes no command, only keystrokes)."""

    argv: list[str]
    cwd: str | None = None
    type_in: str | None = None


class LoginParams(Params):
    """`host/login` and `host/logout`: the host (an ssh alias) whose login is meant."""

    host: str


class LoginResult(Result):
    """How to log in to a host once: run `argv` on the user's terminal, where ssh asks its
    questions; once it exits 0 the daemon uses that connection. `argv` is empty when no login
    is needed now: `since` is set when a login is live already, else the host lets the daemon
    in without one (`needed` false)."""

    argv: list[str] = []
    needed: bool = True
    since: float | None = None


class LogoutResult(Result):
    # False when the host held no live login.
    ended: bool


class ExecResult(Result):
    exit_code: int
    stdout: str = ""
    stderr: str = ""


class MetricsParams(Params):
    host: str
    run_id: str
    workdir: str | None = None
    # Stream `run/points` until the run ends, instead of answering at once.
    follow: bool = False


class MetricsResult(Result):
    """`run/metrics`: a run's series, latest values and progress, and its host's GPU history."""

    host: str
    run_id: str
    series: list[Series]
    latest: dict[str, float | None]
    progress: Progress | None = None
    gpu_history: list[GpuSample] = []
    run: RunInfo | None = None


class MetricsUpdate(Result):
    """`run/points`, during a `run/metrics` with `follow`: points added since the last one
    (all of them when `reset`), the latest values and progress, and a new GPU sample."""

    host: str
    run_id: str
    series: list[Series]
    latest: dict[str, float | None]
    progress: Progress | None = None
    gpu: GpuSample | None = None
    reset: bool = False


class RunsListParams(Params):
    host: str | None = None
    state: RunState | None = None
    # Only the runs of this sweep.
    sweep: str | None = None
    # When true, this connection receives `run/changed` for every run from now on.
    subscribe: bool = False


class RunsListResult(Result):
    runs: list[RunInfo]


class RunChanged(Result):
    """`run/changed`: a run's state (or anything else rtrain knows of it) changed; with
    `removed`, it is gone (`rtrain rm`): `run` is the last that was known of it."""

    run: RunInfo
    removed: bool = False


class HostInfo(Result):
    alias: str
    connection: ConnectionState
    transport: Transport | None = None
    runs: int = 0
    running: int = 0
    last_error: str | None = None
    # When the live `rtrain login` connection the daemon uses for this host was opened
    # (seconds since the epoch); null when the host holds no login.
    login_since: float | None = None
    # The host's GPUs at the monitor's last poll (`gpusAt`), when it has any.
    gpus: list[GpuStat] = []
    gpus_at: float | None = None
    # `slurm` for a cluster's login node; its partitions as the last preflight saw them.
    scheduler: str | None = None
    partitions: list[PartitionInfo] = []
    # The host's guard as the daemon last saw it (`guard.at`); null when it never looked.
    guard: GuardState | None = None
    # What the host cost while rtrain saw it up (it answered every poll): those seconds, the
    # idle ones among them (no run running or queued), and each times the price per hour.
    price_per_hour: float | None = None
    up_seconds: float = 0.0
    idle_seconds: float = 0.0
    cost: float | None = None
    idle_cost: float | None = None


class HostsListResult(Result):
    hosts: list[HostInfo]


class PoolHost(Result):
    """One host of a pool as asked now: its GPUs and how many are free (neither claimed by
    a run nor busy with another process), or why it could not be asked."""

    alias: str
    reachable: bool
    gpus_total: int
    gpus_free: int
    reason: str | None = None


class QueuedRun(Result):
    """A run waiting in its pool: what it waits for (`reason`), its priority and sweep."""

    run_id: str
    reason: str | None = None
    priority: int = 0
    sweep: str | None = None
    created_at: float | None = None


class PoolInfo(Result):
    """A pool of config.toml: its hosts, and the runs queued in it, first to go first."""

    name: str
    hosts: list[PoolHost]
    queue: list[QueuedRun]


class PoolsListResult(Result):
    pools: list[PoolInfo]


class ForgetHostParams(Params):
    """`hosts/forget`: drop a host's connection record (its transport, its last error)."""

    alias: str


class ForgetHostResult(Result):
    # False when there was nothing to forget.
    forgotten: bool


class HostPriceParams(Params):
    """`hosts/price`: what `alias` costs per hour (any unit: the figures carry it), over its
    config.toml `price_per_hour`; null goes back to that."""

    alias: str
    price_per_hour: Annotated[float, msgspec.Meta(ge=0, le=1e6)] | None = None


class HostPriceResult(Result):
    alias: str
    # The price now in force (null: none known).
    price_per_hour: float | None = None


class DaemonInfo(Result):
    pid: int
    version: str
    protocol_version: str
    uptime: float
    socket_path: str
    state_dir: str
    log_path: str
    clients: int
    # Every start-up notice (see InitializeResult), for as long as the daemon runs.
    notices: list[str] = []
    settings: dict[str, str] = {}


class StopDaemonResult(Result):
    stopping: bool = True
