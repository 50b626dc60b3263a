"""`rtrain start`: ship a run's inputs to a host and start it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.client.errors import Interrupted
from rtrain.protocol import requests, validation
from rtrain.protocol.durations import DurationError
from rtrain.protocol.errors import RpcError
from rtrain.protocol.limit_words import parse_limit
from rtrain.protocol.run_states import RETRY_ON

from .completion import complete_host
from .exit_codes import ClientKind
from .input_checks import check
from .launcher_flags import launcher_options
from .local_secrets import local_secrets
from .log_follow import follow_log
from .output import fail, friendly_errors, note, print_json
from .progress import ProgressBar
from .shared_options import JsonOpt
from .ship_summary import FollowLinksOpt, IncludeOpt, print_ship_summary

if TYPE_CHECKING:
    from rtrain.protocol.requests import Call, OnStall, RetryOn, SyncTracker
    from rtrain.protocol.requests import StartResultAnswer as StartResult

    StartCall = Call[StartResult]

# protocol.messages.SyncTracker's words (not imported: msgspec costs start-up time);
# tests/trackers/test_mlflow_sync.py checks the two agree.
SYNC_TRACKERS = ("mlflow", "wandb")

# The options of each launcher, in a panel of their own in `rtrain start --help` (a start
# option of all launchers goes in the default panel; docs/architecture.md).
LAUNCHER_PANEL = "How the run is run"
SLURM_PANEL = 'Slurm hosts (scheduler = "slurm")'
NODES_PANEL = "Across hosts (HOST1,HOST2 --nodes N)"


def _existing(value: Path | None) -> Path | None:
    """Refuse a missing local file up front, before anything else happens."""
    if value is not None and not value.exists():
        raise typer.BadParameter(f"Path {str(value)!r} does not exist.")
    return value


def _all_existing(values: list[Path]) -> list[Path]:
    for value in values:
        _existing(value)
    return values


def _limits(max_duration: str | None, stall_after: str | None) -> tuple[int | None, int | None]:
    """--max-duration and --stall-after in seconds (0: off), or one sentence and exit 2."""
    return (
        _limit("--max-duration", max_duration, "a maximum duration"),
        _limit("--stall-after", stall_after, "a stall period"),
    )


def _limit(option: str, text: str | None, what: str) -> int | None:
    if text is None:
        return None
    try:
        return parse_limit(text, what)
    except DurationError as error:
        fail(f"{option}: {error}", 2)


def _host_or_pool(host: str | None, pool: str | None) -> str:
    """HOST, or `@POOL` from --pool; exactly one of them."""
    if host is not None and pool is not None:
        fail("give HOST or --pool, not both.", 2)
    if host is None and pool is None:
        fail("name a HOST (or @POOL), or --pool POOL.", 2)
    return host if host is not None else f"@{pool}"


def _env_pairs(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals:
            fail(f"--env {pair!r}: expected KEY=VALUE.", kind=ClientKind.USAGE)
        try:
            validation.env_var(name, value)
        except RpcError as error:
            fail(error.message, kind=error.kind or ClientKind.USAGE)
        env[name] = value
    return env


@friendly_errors
def start(
    host: str | None = typer.Argument(
        None,
        metavar="HOST",
        help="SSH alias of the host (or `local`); @POOL: a host of that pool with the GPUs free.",
        autocompletion=complete_host,
    ),
    pool: str | None = typer.Option(
        None, "--pool", help="Place the run in this pool of config.toml (the same as HOST @POOL)."
    ),
    priority: int = typer.Option(
        0,
        "--priority",
        min=-1000,
        max=1000,
        help="A run queued in its pool goes before those of a lower priority.",
    ),
    config: Path | None = typer.Option(
        None,
        "--config",
        "-c",
        callback=_existing,
        help="Training config to ship (as config.yaml); what {config} names. The demo "
        "trainer needs one; your own command may not.",
    ),
    dataset: list[Path] = typer.Option(
        [],
        "--dataset",
        "-d",
        callback=_all_existing,
        help="Dataset file or directory to ship under its own name (repeatable).",
    ),
    code: Path | None = typer.Option(
        None,
        "--code",
        callback=_existing,
        help="Directory whose contents land in the run directory (.rtrainignore, else "
        ".gitignore, is honoured; .git/ never ships).",
    ),
    include: list[str] = IncludeOpt,
    follow_links: bool = FollowLinksOpt,
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="List every file shipped, and how it got there."
    ),
    gpus: int = typer.Option(
        1, "--gpus", min=0, help="GPUs the run expects (torchrun: one rank per GPU)."
    ),
    launcher: str | None = typer.Option(
        None,
        "--launcher",
        help="process (one detached process) or torchrun (--gpus ranks); "
        "default: torchrun if the command has {torchrun}, else process.",
        rich_help_panel=LAUNCHER_PANEL,
    ),
    run_id: str | None = typer.Option(
        None, "--run-id", help="Name of the run (default: run-<epoch>-<hex>)."
    ),
    wait: bool = typer.Option(
        False, "--wait", help="Too few GPUs free: queue the run on the host until they are."
    ),
    share_gpus: bool = typer.Option(
        False, "--share-gpus", help="Count GPUs busy with other (non-rtrain) processes as free."
    ),
    python: str | None = typer.Option(
        None, "--python", help="Interpreter on the host (default python3, or the host's)."
    ),
    workdir: str | None = typer.Option(
        None, "--workdir", help="Remote work directory (default ~/.rtrain, or the host's)."
    ),
    env: list[str] = typer.Option(
        [],
        "--env",
        "-e",
        metavar="KEY=VALUE",
        help="Set a variable for the setup step and the trainer (repeatable; recorded, "
        "so not for secrets).",
    ),
    setup: str | None = typer.Option(
        None,
        "--setup",
        metavar="COMMAND",
        help="Shell command run in the run directory before the trainer "
        "(e.g. 'pip install -r requirements.txt').",
    ),
    requirements: str | None = typer.Option(
        None,
        "--requirements",
        metavar="FILE",
        help="pip requirements: the run's {python} is a virtual environment built from "
        "them once per host and reused (default: the host's, else the code's "
        "requirements.txt; '' for none).",
    ),
    image: str | None = typer.Option(
        None,
        "--image",
        metavar="NAME",
        help="Run the setup and the trainer inside this container image, in the host's "
        "podman or docker ({python}: the image's python3; on Slurm, pyxis' "
        "--container-image; default: the host's image; '' for none).",
    ),
    follow: bool = typer.Option(
        True, "--follow/--no-follow", help="Stream the log until the run ends."
    ),
    secret: list[str] = typer.Option(
        [],
        "--secret",
        help="Pass this local environment variable to the trainer (never on a command line).",
    ),
    time_limit: str | None = typer.Option(
        None,
        "--time",
        help="Slurm hosts: the job's time limit (e.g. 2:00:00).",
        rich_help_panel=SLURM_PANEL,
    ),
    partition: str | None = typer.Option(
        None,
        "--partition",
        help="Slurm hosts: the partition (default: the host's).",
        rich_help_panel=SLURM_PANEL,
    ),
    nodes: int = typer.Option(
        1,
        "--nodes",
        min=1,
        help="Slurm hosts: nodes for the job; HOST1,HOST2: the count of hosts listed.",
        rich_help_panel=SLURM_PANEL,
    ),
    master_addr: str | None = typer.Option(
        None,
        "--master-addr",
        metavar="ADDRESS",
        help="HOST1,HOST2: the address the other nodes reach the first at "
        "(default: its HostName, as `ssh -G` resolves it).",
        rich_help_panel=NODES_PANEL,
    ),
    retry: int | None = typer.Option(
        None,
        "--retry",
        min=0,
        max=100,
        metavar="N",
        help="Start the run again (resuming in its run dir) up to N times when it is lost "
        "(host rebooted, session killed); default: the host's retry, else 0.",
    ),
    retry_on: str | None = typer.Option(
        None,
        "--retry-on",
        metavar="lost|failed",
        help="With --retry: `failed` retries a run that failed with its own exit code too.",
    ),
    signal_before_timeout: int | None = typer.Option(
        None,
        "--signal-before-timeout",
        min=1,
        help="Slurm hosts: send the trainer SIGUSR2 this many seconds before the time limit.",
        rich_help_panel=SLURM_PANEL,
    ),
    requeue: bool = typer.Option(
        False,
        "--requeue/--no-requeue",
        help="Slurm hosts: let Slurm requeue the job.",
        rich_help_panel=SLURM_PANEL,
    ),
    max_duration: str | None = typer.Option(
        None,
        "--max-duration",
        metavar="DURATION",
        help="Stop the run once it has run this long, setup included (e.g. 6h; off); "
        "kept by the host itself. Default: the host's max_duration, else none.",
    ),
    stall_after: str | None = typer.Option(
        None,
        "--stall-after",
        metavar="DURATION",
        help="Flag the run stalled once its log is still this long with its GPUs idle "
        "(default: the host's stall_after, else 30m; off).",
    ),
    on_stall: str | None = typer.Option(
        None,
        "--on-stall",
        metavar="flag|stop",
        help="What a stall does: flag it (default, or the host's on_stall) or stop the run.",
    ),
    then_fetch: str | None = typer.Option(
        None,
        "--then-fetch",
        metavar="PATH",
        help="Once the run completes, fetch this path of the run (verified), even with "
        "this shell gone.",
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="With --then-fetch: the local directory to fetch into (default: here).",
    ),
    then_terminate: bool = typer.Option(
        False,
        "--then-terminate",
        help="After the run completed (and --then-fetch was verified), run the host's "
        "terminate command (config.toml: terminate = ...).",
    ),
    sync: list[str] = typer.Option(
        [],
        "--sync",
        metavar="mlflow|wandb",
        help="Bring the run's tracker files home while it trains and at its end, into this "
        "machine's tracker (mlflow: its mlruns/ into MLFLOW_TRACKING_URI here; wandb: its "
        "offline runs, with wandb sync and this machine's W&B login); repeatable.",
    ),
    sync_to: str | None = typer.Option(
        None,
        "--sync-to",
        metavar="URI",
        help="With --sync mlflow: the tracking URI here (default: $MLFLOW_TRACKING_URI).",
    ),
    reverse: list[int] = typer.Option(
        [],
        "--reverse",
        metavar="PORT",
        min=1,
        max=65535,
        help="A server listening on this port here is reached by the run at 127.0.0.1:PORT "
        "of the host (another port where that one is taken), from before the trainer "
        "starts until the run ends, and again on a restart (repeatable).",
    ),
    command: list[str] = typer.Argument(
        None,
        metavar="COMMAND",
        help="Trainer command after `--`; "
        "{python} {config} {dataset} {run_dir} {gpus} {torchrun} "
        "are filled in. Default: the built-in demo trainer.",
    ),
    json: bool = JsonOpt,
) -> None:
    """Ship the config, datasets and code to HOST and start a run that outlives this shell.
    HOST1,HOST2,... with --nodes N: one torchrun run across those hosts. @POOL (or --pool):
    on a host of the pool that can give it --gpus now, else queued there (docs/pools.md)."""
    host, hosts = _hosts(host, pool)
    check(host=host, run_id=run_id, workdir=workdir, python=python)
    options = launcher_options(
        hosts,
        launcher,
        partition=partition,
        time_limit=time_limit,
        nodes=nodes,
        signal_before_timeout=signal_before_timeout,
        requeue=requeue,
        master_addr=master_addr,
    )
    _check_words(retry_on, on_stall, sync)
    limits = _limits(max_duration, stall_after)
    sync_to = _sync_target(sync, sync_to)
    if out is not None and then_fetch is None:
        fail("-o/--out names where --then-fetch fetches to; give --then-fetch PATH too.", 2)
    call = requests.run_start(
        host=host,
        config=str(config.resolve()) if config is not None else None,
        gpus=gpus,
        python=python,
        workdir=workdir,
        datasets=[str(path.resolve()) for path in dataset] or None,
        code=str(code.resolve()) if code is not None else None,
        include=list(include) or None,
        follow_links=follow_links or None,
        env=_env_pairs(env) if env else None,
        setup=setup,
        requirements=str(Path(requirements).resolve()) if requirements else requirements,
        image=image,
        run_id=run_id,
        command=list(command) if command else None,
        launcher=options,
        wait=wait or None,
        share_gpus=share_gpus or None,
        secrets=local_secrets(secret) or None,
        retry=retry,
        retry_on=cast("RetryOn | None", retry_on),  # checked above
        max_duration=limits[0],
        stall_after=limits[1],
        on_stall=cast("OnStall | None", on_stall),  # checked above
        then_fetch=then_fetch,
        then_fetch_into=str((out or Path(".")).resolve()) if then_fetch is not None else None,
        then_terminate=then_terminate or None,
        priority=priority or None,
        sync=cast("list[SyncTracker]", list(dict.fromkeys(sync))) or None,  # checked above
        sync_to=sync_to,
        reverse=list(dict.fromkeys(reverse)) or None,
        progress_token="upload",
    )
    with DaemonClient.connect() as client:
        result = _send(client, call, host, json)
        followed = _print_started(result, host, verbose=verbose, json=json)
        if follow and followed is not None:
            follow_log(client, followed, result.run.run_id, None, 0, json)


def _hosts(host: str | None, pool: str | None) -> tuple[str, list[str]]:
    """The host to start on (the first of HOST1,HOST2 or @POOL) and the hosts listed."""
    host = _host_or_pool(host, pool)
    hosts = host.split(",") if "," in host else []
    for one in hosts:
        check(host=one)
    return (hosts[0] if hosts else host), hosts


def _check_words(retry_on: str | None, on_stall: str | None, sync: list[str]) -> None:
    """The options that take one of a few words: one sentence and exit 2 for another."""
    if retry_on is not None and retry_on not in RETRY_ON:
        fail(f"--retry-on must be lost or failed, not {retry_on!r}.", 2)
    if on_stall is not None and on_stall not in ("flag", "stop"):
        fail(f"--on-stall must be flag or stop, not {on_stall!r}.", 2)
    for tracker in sync:
        if tracker not in SYNC_TRACKERS:
            fail(f"--sync takes {', '.join(SYNC_TRACKERS)}, not {tracker!r}.", 2)


def _sync_target(sync: list[str], sync_to: str | None) -> str | None:
    """Where --sync brings the files here: --sync-to, else this shell's tracking URI."""
    if sync_to is not None and "mlflow" not in sync:
        fail("--sync-to names where --sync mlflow brings files; give --sync mlflow too.", 2)
    if "mlflow" in sync and sync_to is None:
        return os.environ.get("MLFLOW_TRACKING_URI") or None
    return sync_to


def _send(client: DaemonClient, call: StartCall, host: str, json: bool) -> StartResult:
    """The start request, with its upload's progress; Ctrl-C cancels it, or says what
    runs when the trainer was launched already."""
    bar = ProgressBar(None if not json else False)
    try:
        return client.call(
            call,
            on_notification=lambda _m, p: bar.update(p),
            cancel_on_interrupt=True,
        )
    except Interrupted as interrupted:
        bar.clear()
        if interrupted.result is None:
            fail(
                f"interrupted: the start was cancelled and nothing runs on {host}.",
                kind=ClientKind.INTERRUPTED,
            )
        run = interrupted.result.run
        note(
            f"interrupted, but the trainer had already been launched: {run.run_id} "
            f"runs on {host}.\n  tail:  rtrain tail {host} {run.run_id}\n"
            f"  stop:  rtrain stop {host} {run.run_id}"
        )
        raise typer.Exit(130) from None
    finally:
        bar.clear()


def _print_started(result: StartResult, host: str, *, verbose: bool, json: bool) -> str | None:
    """What was started where; the host whose log to follow (None: queued in a pool)."""
    run = result.run
    if json:
        print_json(result)
        return host
    if run.job_id:
        print(f"✓ submitted {run.run_id} to {host} as Slurm job {run.job_id} (queued)")
        _print_hints(host, run.run_id)
        return host
    if result.placement:
        print(result.placement)  # a pool's run: where it went and why
        host = run.host
    print_ship_summary(result, host, verbose=verbose)
    if run.state == "queued" and host.startswith("@"):
        print(f"✓ queued {run.run_id} in {host}: {run.reason}")
        print(f"  status: rtrain status {host} {run.run_id}")
        print(f"  stop:   rtrain stop {host} {run.run_id}", flush=True)
        return None
    if run.state == "queued":
        print(f"✓ queued {run.run_id} on {host}: {run.reason}")
    else:
        print(f"✓ started {run.run_id} on {host}")
    _print_hints(host, run.run_id)
    return host


def _print_hints(host: str, run_id: str) -> None:
    print(f"  tail:  rtrain tail {host} {run_id}")
    print(f"  stop:  rtrain stop {host} {run_id}", flush=True)
