"""The commands a user runs against hosts: preflight, start, tail, status, fetch, stop, gc, runs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.client.errors import Interrupted
from rtrain.client.run_state_text import attempt_text, state_text
from rtrain.protocol import requests, validation
from rtrain.protocol.byte_sizes import human_bytes
from rtrain.protocol.durations import DurationError, human_duration
from rtrain.protocol.errors import Kind, RpcError
from rtrain.protocol.limit_words import cost_text, parse_limit
from rtrain.protocol.messages import RunState
from rtrain.protocol.run_states import RETRY_ON

from .after_run_view import state_with_plan
from .completion import complete_host, complete_run_id
from .describe import table, when
from .exit_codes import ClientKind
from .guard_view import guard_cell
from .input_checks import check
from .log_follow import follow_log
from .metrics_view import (
    MetricsFollower,
    gpu_text,
    loss_text,
    progress_text,
    show_metrics,
)
from .output import fail, friendly_errors, note, print_json
from .progress import ProgressBar
from .ship_summary import FollowLinksOpt, IncludeOpt, print_ship_summary
from .status_view import show_status
from .usage import PlainUsage

if TYPE_CHECKING:
    from rtrain.protocol.requests import Launcher, OnStall

HostArg = typer.Argument(
    ..., metavar="HOST", help="SSH alias of the host (or `local`).", autocompletion=complete_host
)
RunArg = typer.Argument(
    ..., metavar="RUN", help="The run id `start` printed.", autocompletion=complete_run_id
)
JsonOpt = typer.Option(False, "--json", "-j", help="Print machine-readable JSON.")
WorkdirOpt = typer.Option(
    None, "--workdir", help="Remote directory of runs, if not the one recorded (default ~/.rtrain)."
)
NodeOpt = typer.Option(
    None, "--node", min=0, metavar="K", help="A run across hosts: node K (0: the first host)."
)


def _existing(value: Path | None) -> Path | None:
    """Refuse a missing local file up front, before anything else happens."""
    if value is not None and not value.exists():
        raise typer.BadParameter(f"Path {str(value)!r} does not exist.")
    return value


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _fetch_interrupted(out: Path, progress: list[Any]) -> str:
    """What a fetch cancelled by Ctrl-C kept, and what not."""
    sofar = ""
    if progress and progress[0].total_bytes and progress[0].done_bytes:
        done, total = progress[0].done_bytes, progress[0].total_bytes
        sofar = f" (about {human_bytes(done)} of {human_bytes(total)} had arrived)"
    kept = out / ".rtrain-partial"
    again = (
        f"it resumes from the verified pieces kept in {kept}."
        if kept.is_dir()
        else "no piece of the one on its way had arrived whole, so it starts that one afresh."
    )
    return (
        f"interrupted: the fetch was cancelled{sofar}. The files that had arrived are in "
        f"{out} and verified; nothing is under the name of the one on its way. Run the same "
        f"fetch again for the rest: {again}"
    )


def _all_existing(values: list[Path]) -> list[Path]:
    for value in values:
        _existing(value)
    return values


# How each finding's level shows in front of it: problems and warnings stand out.
_FINDING_MARKS = {"problem": "✗ ", "warning": "! ", "info": "· "}


def local_secrets(names: list[str]) -> dict[str, str]:
    secrets = {}
    for name in names:
        try:
            validation.secret_name(name)
        except RpcError as error:
            fail(error.message, kind=error.kind or ClientKind.USAGE)
        if name not in os.environ:
            fail(
                f"--secret {name}: no such variable in your environment; export it first.",
                kind=Kind.INVALID_SECRET,
            )
        secrets[name] = os.environ[name]
    return secrets


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


def register(app: typer.Typer) -> None:
    @app.command(cls=PlainUsage)
    @friendly_errors
    def preflight(
        host: str = HostArg,
        gpus: int = typer.Option(1, "--gpus", min=0, help="GPUs the host must have."),
        python: str | None = typer.Option(
            None, "--python", help="Interpreter on the host (default python3, or the host's)."
        ),
        workdir: str | None = typer.Option(
            None, "--workdir", help="Remote work directory (default ~/.rtrain, or the host's)."
        ),
        require: list[str] = typer.Option(
            [], "--require", help="A package the python must have, e.g. 'transformers>=5'."
        ),
        require_file: list[Path] = typer.Option(
            [], "--require-file", help="A requirements.txt whose packages the python must have."
        ),
        config: Path | None = typer.Option(
            None, "--config", "-c", help="The config start would ship (its size is checked)."
        ),
        dataset: list[Path] = typer.Option(
            [], "--dataset", "-d", help="A dataset file or directory start would ship."
        ),
        code: Path | None = typer.Option(
            None, "--code", help="The code directory start would ship."
        ),
        include: list[str] = IncludeOpt,
        follow_links: bool = FollowLinksOpt,
        inputs: list[Path] = typer.Option(
            [], "--inputs", "--input", help="Any other local file or directory to be shipped."
        ),
        hf_model: list[str] = typer.Option(
            [], "--hf-model", help="A Hugging Face model (ORG/NAME) the host must download."
        ),
        secret: list[str] = typer.Option(
            [],
            "--secret",
            help="A local environment variable the run gets; HF_TOKEN is tried on the Hub.",
        ),
        json: bool = JsonOpt,
    ) -> None:
        """Check that HOST can train: reachable, the python with torch and its CUDA, GPUs and
        their use, packages, disk for what start would ship, Hugging Face access."""
        check(host=host, workdir=workdir, python=python)
        requires = list(require)
        if require_file:
            from .requirements_file import RequirementsFileError, read_requirements

            try:
                for path in require_file:
                    requires += read_requirements(path)
            except RequirementsFileError as error:
                fail(str(error), kind=Kind.INVALID_REQUIREMENT)
        try:
            for text in requires:
                validation.requirement(text)
            for model in hf_model:
                validation.hf_model(model)
        except RpcError as error:
            fail(error.message, kind=error.kind or ClientKind.USAGE)
        shipped = [p for p in (config, code, *dataset, *inputs) if p is not None]
        others = [*dataset, *inputs]
        for path in shipped:
            if not path.exists():
                fail(f"Path {str(path)!r} does not exist.", kind=Kind.LOCAL_FILE_MISSING)
        secrets = local_secrets(secret)
        call = requests.host_preflight(
            host=host,
            gpus=gpus,
            python=python,
            workdir=workdir,
            requires=requires or None,
            inputs=[str(path.resolve()) for path in others] or None,
            config=str(config.resolve()) if config is not None else None,
            code=str(code.resolve()) if code is not None else None,
            include=list(include) or None,
            follow_links=follow_links or None,
            hf_models=list(hf_model) or None,
            secrets=secrets or None,
        )
        with DaemonClient.connect() as client:
            verdict = client.call(call)
        if json:
            print_json(verdict)
        else:
            print(_verdict_line(host, verdict))
            for finding in verdict.findings:
                print(f"  {_FINDING_MARKS.get(finding.level, '')}{finding.topic}: {finding.text}")
            # An older daemon sends reasons without findings.
            if not verdict.findings:
                for reason in verdict.reasons:
                    print(f"  {reason}")
        if not verdict.ok:
            raise typer.Exit(1)

    @app.command(cls=PlainUsage, context_settings={"allow_extra_args": False})
    @friendly_errors
    def start(
        host: str = HostArg,
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
        follow: bool = typer.Option(
            True, "--follow/--no-follow", help="Stream the log until the run ends."
        ),
        secret: list[str] = typer.Option(
            [],
            "--secret",
            help="Pass this local environment variable to the trainer (never on a command line).",
        ),
        time_limit: str | None = typer.Option(
            None, "--time", help="Slurm hosts: the job's time limit (e.g. 2:00:00)."
        ),
        partition: str | None = typer.Option(
            None, "--partition", help="Slurm hosts: the partition (default: the host's)."
        ),
        nodes: int = typer.Option(
            1,
            "--nodes",
            min=1,
            help="Slurm hosts: nodes for the job; HOST1,HOST2: the count of hosts listed.",
        ),
        master_addr: str | None = typer.Option(
            None,
            "--master-addr",
            metavar="ADDRESS",
            help="HOST1,HOST2: the address the other nodes reach the first at "
            "(default: its HostName, as `ssh -G` resolves it).",
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
        ),
        requeue: bool = typer.Option(
            False, "--requeue/--no-requeue", help="Slurm hosts: let Slurm requeue the job."
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
        HOST1,HOST2,... with --nodes N: one torchrun run across those hosts."""
        hosts = host.split(",") if "," in host else []
        for one in hosts:
            check(host=one)
        host = hosts[0] if hosts else host
        check(host=host, run_id=run_id, workdir=workdir, python=python)
        if retry_on is not None and retry_on not in RETRY_ON:
            fail(f"--retry-on must be lost or failed, not {retry_on!r}.", 2)
        if launcher is not None and launcher not in ("process", "torchrun"):
            fail(f"--launcher must be process or torchrun, not {launcher!r}.", 2)
        if on_stall is not None and on_stall not in ("flag", "stop"):
            fail(f"--on-stall must be flag or stop, not {on_stall!r}.", 2)
        limits = _limits(max_duration, stall_after)
        if out is not None and then_fetch is None:
            fail("-o/--out names where --then-fetch fetches to; give --then-fetch PATH too.", 2)
        secrets = local_secrets(secret)
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
            run_id=run_id,
            command=list(command) if command else None,
            launcher=cast("Launcher | None", launcher),  # checked above
            wait=wait or None,
            share_gpus=share_gpus or None,
            secrets=secrets or None,
            time=time_limit,
            partition=partition,
            signal_before_timeout=signal_before_timeout,
            nodes=nodes if nodes != 1 else None,
            hosts=hosts or None,
            master_addr=master_addr,
            retry=retry,
            retry_on=retry_on,  # checked above
            requeue=requeue or None,
            max_duration=limits[0],
            stall_after=limits[1],
            on_stall=cast("OnStall | None", on_stall),  # checked above
            then_fetch=then_fetch,
            then_fetch_into=str((out or Path(".")).resolve()) if then_fetch is not None else None,
            then_terminate=then_terminate or None,
            progress_token="upload",
        )
        bar = ProgressBar(None if not json else False)
        with DaemonClient.connect() as client:
            try:
                result = client.call(
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
            run = result.run
            if json:
                print_json(result)
            elif run.job_id:
                print(f"✓ submitted {run.run_id} to {host} as Slurm job {run.job_id} (queued)")
                print(f"  tail:  rtrain tail {host} {run.run_id}")
                print(f"  stop:  rtrain stop {host} {run.run_id}", flush=True)
            else:
                print_ship_summary(result, host, verbose=verbose)
                if run.state == "queued":
                    print(f"✓ queued {run.run_id} on {host}: {run.reason}")
                else:
                    print(f"✓ started {run.run_id} on {host}")
                print(f"  tail:  rtrain tail {host} {run.run_id}")
                print(f"  stop:  rtrain stop {host} {run.run_id}", flush=True)
            if follow:
                follow_log(client, host, run.run_id, None, 0, json)

    @app.command(cls=PlainUsage)
    @friendly_errors
    def tail(
        host: str = HostArg,
        run_id: str = RunArg,
        offset: int = typer.Option(0, "--offset", min=0, help="Start at this byte of the log."),
        lines: int | None = typer.Option(
            None, "--lines", "-n", min=0, help="Start this many lines before the end of the log."
        ),
        follow: bool = typer.Option(
            True, "--follow/--no-follow", help="Keep streaming until the run ends."
        ),
        node: int | None = NodeOpt,
        workdir: str | None = WorkdirOpt,
        json: bool = JsonOpt,
    ) -> None:
        """Stream the log of a run (reattaching from anywhere); end with its final state. A
        run across hosts: every node's lines behind [node K], or --node K's log alone."""
        check(host=host, run_id=run_id, workdir=workdir)
        if lines is not None and offset:
            fail("give --offset or --lines, not both.", 2)
        with DaemonClient.connect() as client:
            follow_log(client, host, run_id, workdir, offset, json, follow, lines=lines, node=node)

    @app.command(cls=PlainUsage)
    @friendly_errors
    def status(
        host: str = HostArg,
        run_id: str = RunArg,
        workdir: str | None = WorkdirOpt,
        json: bool = JsonOpt,
    ) -> None:
        """Say how a run stands: running, completed, failed (exit N), stopped, lost, unknown."""
        check(host=host, run_id=run_id, workdir=workdir)
        with DaemonClient.connect() as client:
            show_status(client, host, run_id, workdir, json)

    @app.command(cls=PlainUsage)
    @friendly_errors
    def metrics(
        host: str = HostArg,
        run_id: str = RunArg,
        follow: bool = typer.Option(
            False, "--follow/--no-follow", help="Keep showing new values until the run ends."
        ),
        workdir: str | None = WorkdirOpt,
        json: bool = JsonOpt,
    ) -> None:
        """Show what a run's log says: the latest value of each metric, a sparkline of the
        loss, progress and ETA; with --json the series, one object per step."""
        check(host=host, run_id=run_id, workdir=workdir)
        call = requests.run_metrics(
            host=host, run_id=run_id, workdir=workdir or None, follow=follow
        )
        with DaemonClient.connect() as client:
            if not follow:
                show_metrics(client.call(call), json)
                return
            follower = MetricsFollower(json)
            try:
                result = client.call(call, on_notification=follower)
            except KeyboardInterrupt:
                follower.end()
                raise typer.Exit(130) from None
            follower.end()
        if not json and result.run is not None:
            note(f"{run_id} on {host}: {state_text(result.run)}")

    @app.command(cls=PlainUsage)
    @friendly_errors
    def fetch(
        host: str = HostArg,
        run_id: str = RunArg,
        path: str = typer.Argument(
            ..., metavar="PATH", help="File or directory inside the run directory."
        ),
        out: Path = typer.Option(Path("."), "--out", "-o", help="Local directory to copy into."),
        force: bool = typer.Option(
            False, "--force", help="Fetch every file again, even those already here unchanged."
        ),
        node: int | None = NodeOpt,
        workdir: str | None = WorkdirOpt,
        json: bool = JsonOpt,
    ) -> None:
        """Copy a file or directory of a run home; every file's sha256 is checked (a run
        across hosts: node 0's, or --node K's)."""
        check(host=host, run_id=run_id, workdir=workdir)
        try:
            validation.fetch_path(path)
        except RpcError as error:
            fail(error.message, kind=error.kind or ClientKind.USAGE)
        call = requests.run_fetch(
            host=host,
            run_id=run_id,
            path=path,
            dest=str(out.resolve()),
            workdir=workdir or None,
            force=force or None,
            node=node,
            progress_token="fetch",
        )
        bar = ProgressBar(None if not json else False)
        arrived: list[Any] = []  # the last progress, to say how far it got

        def on_progress(method: str, progress: Any) -> None:
            bar.update(progress)
            arrived[:] = [progress.value]

        with DaemonClient.connect() as client:
            try:
                result = client.call(call, on_notification=on_progress, cancel_on_interrupt=True)
            except Interrupted as interrupted:
                bar.clear()
                if interrupted.result is None:
                    fail(_fetch_interrupted(out, arrived), kind=ClientKind.INTERRUPTED)
                result = interrupted.result  # it had finished: say so as usual
            finally:
                bar.clear()
        if json:
            print_json(result)
            return
        cwd = Path.cwd()
        for f in result.files:
            local = Path(f.local_path)
            shown = local.relative_to(cwd) if local.is_relative_to(cwd) else local
            print(f"  {shown}  {human_bytes(f.size)}  sha256 {'ok' if f.verified else 'BAD'}")
        skipped = (
            f" ({result.skipped} already here, unchanged: not sent again)" if result.skipped else ""
        )
        note(
            f"fetched {len(result.files)} file(s), {human_bytes(result.total_bytes)}, "
            f"all checksums matched{skipped}"
        )

    @app.command(cls=PlainUsage)
    @friendly_errors
    def stop(
        host: str = HostArg,
        run_id: str = RunArg,
        force: bool = typer.Option(False, "--force", help="SIGKILL what survives the grace."),
        grace: float | None = typer.Option(
            None,
            "--grace",
            min=0,
            max=3600,
            help="Seconds to wait after SIGTERM (default 10; 35 for a torchrun run).",
        ),
        workdir: str | None = WorkdirOpt,
        json: bool = JsonOpt,
    ) -> None:
        """Stop every process of a run and confirm they are gone."""
        check(host=host, run_id=run_id, workdir=workdir)
        call = requests.run_stop(
            host=host, run_id=run_id, workdir=workdir or None, force=force, grace=grace
        )
        with DaemonClient.connect() as client:
            result = client.call(call)
        if json:
            print_json(result)
        elif result.outcome == "stopped":
            print(f"stopped {run_id} on {host}")
        else:
            print(f"{run_id} was not running on {host}")

    @app.command(cls=PlainUsage)
    @friendly_errors
    def gc(
        host: str = HostArg,
        workdir: str | None = typer.Option(
            None, "--workdir", help="Remote work directory (default ~/.rtrain, or the host's)."
        ),
        json: bool = JsonOpt,
    ) -> None:
        """Remove inputs cached on HOST that no run uses any more, and cut uploads."""
        check(host=host, workdir=workdir)
        with DaemonClient.connect() as client:
            result = client.call(requests.host_gc(host=host, workdir=workdir))
        if json:
            print_json(result)
        else:
            print(
                f"freed {human_bytes(result.freed_bytes)} on {host}: {result.entries} cached "
                f"input(s) no run uses, {result.partials} cut upload(s)"
            )
            if result.local_partials or result.local_freed_bytes:
                print(
                    f"freed {human_bytes(result.local_freed_bytes)} here: partial data of "
                    f"{result.local_partials} cut fetch(es) from {host}"
                )

    @app.command(cls=PlainUsage)
    @friendly_errors
    def runs(
        host: str | None = typer.Option(None, "--host", help="Only runs of this host."),
        state: RunState | None = typer.Option(None, "--state", help="Only runs in this state."),
        json: bool = JsonOpt,
    ) -> None:
        """List the runs rtrain knows of, newest first."""
        call = requests.runs_list(host=host, state=state)
        with DaemonClient.connect() as client:
            found = client.call(call).runs
        if json:
            print_json(found)
            return
        if not found and call.params:
            filters = " ".join(f"--{name} {value}" for name, value in call.params.items())
            note(f"no runs match {filters}; `rtrain runs` lists them all")
            return
        if not found:
            note("no runs yet; start one with `rtrain start HOST -c CONFIG`")
            return
        headers = ["RUN", "HOST", "STATE", "STARTED", "PROGRESS", "LOSS"]
        rows = [
            [
                r.run_id,
                r.host,
                state_with_plan(state_text(r), r.after),
                when(r.started_at),
                progress_text(r.progress) or "-",
                loss_text(r.latest) or "-",
            ]
            for r in found
        ]
        for row, r in zip(rows, found, strict=True):
            if r.nodes:  # a run across hosts: every node's host
                row[1] = ",".join(node.host for node in r.nodes)
        # Attempts where a run has more than one (restart, or the daemon's --retry).
        if any(len(r.attempts) > 1 for r in found):
            headers.append("ATTEMPT")
            for row, r in zip(rows, found, strict=True):
                row.append(attempt_text(r.attempts[-1]) if len(r.attempts) > 1 else "-")
        # Costs where a host has a price (config.toml's price_per_hour, or hosts --price).
        if any(r.cost is not None for r in found):
            headers.append("COST")
            for row, r in zip(rows, found, strict=True):
                row.append(cost_text(r.cost) if r.cost is not None else "-")
        print(table(headers, rows))

    @app.command(cls=PlainUsage)
    @friendly_errors
    def hosts(
        forget: str | None = typer.Option(
            None,
            "--forget",
            metavar="HOST",
            help="Forget HOST: its connection record and last error (not its runs).",
            autocompletion=complete_host,
        ),
        price: tuple[str, str] | None = typer.Option(
            None,
            "--price",
            metavar="HOST RATE",
            help="What an hour of HOST costs (any unit, e.g. 0.22), over config.toml's "
            "price_per_hour; RATE off goes back to that.",
        ),
        json: bool = JsonOpt,
    ) -> None:
        """List known hosts with their connection, transport, runs and, where priced, what
        they cost while rtrain saw them up (and of that, idle)."""
        if price is not None:
            _set_price(*price, json=json)
            return
        if forget is not None:
            check(host=forget)
            with DaemonClient.connect() as client:
                client.call(requests.hosts_forget(alias=forget))
            note(f"forgot {forget}")
            return
        with DaemonClient.connect() as client:
            found = client.call(requests.hosts_list()).hosts
        if json:
            print_json(found)
            return
        headers = ["HOST", "CONNECTION", "TRANSPORT", "RUNS", "RUNNING", "GPUS"]
        rows = [
            [
                h.alias,
                h.connection,
                h.transport or "-",
                str(h.runs),
                str(h.running),
                ", ".join(gpu_text(g) for g in h.gpus) or _partitions_text(h) or "-",
            ]
            for h in found
        ]
        # A GUARD column only once some host has a guard rtrain has seen.
        if any(h.guard is not None for h in found):
            headers.insert(5, "GUARD")
            for row, h in zip(rows, found, strict=True):
                row.insert(5, guard_cell(h.guard))
        # A LOGIN column only once some host holds a login (`rtrain login`).
        if any(h.login_since is not None for h in found):
            from .login_commands import since_text

            headers.append("LOGIN")
            for row, h in zip(rows, found, strict=True):
                row.append("-" if h.login_since is None else f"since {since_text(h.login_since)}")
        if any(h.cost is not None for h in found):
            headers += ["COST", "IDLE"]
            for row, h in zip(rows, found, strict=True):
                row += _host_cost_cells(h)
        # The last error goes in CONNECTION, cut so that every line fits the terminal (the
        # whole of it is in --json and the daemon log).
        others = sum(
            max(len(row[i]) for row in [headers, *rows]) + 2 for i in range(len(headers)) if i != 1
        )
        room = shutil.get_terminal_size().columns - others
        for row, h in zip(rows, found, strict=True):
            if h.last_error:
                row[1] = _cut(f"{h.connection} ({h.last_error})", max(room, len(h.connection)))
        print(table(headers, rows))


def _verdict_line(host: str, verdict: Any) -> str:
    """`HOST is ready to train.`, or `✗ HOST cannot train`. A ready host whose python lacks
    torch says so here too: a trainer that imports torch fails at its first line."""
    if not verdict.ok:
        return f"✗ {host} cannot train"
    caveats = [f.text for f in verdict.findings if f.topic == "torch" and f.level == "warning"]
    if caveats:
        return f"{host} is ready to train, but {'; '.join(caveats)}."
    return f"{host} is ready to train."


def _set_price(host: str, rate: str, json: bool) -> None:
    check(host=host)
    price: float | None = None
    if rate.strip().lower() not in ("off", "none"):
        try:
            price = float(rate)
        except ValueError:
            price = -1.0
        if not 0 <= price <= 1e6:
            fail(f"--price {host}: {rate!r} is not a rate: give a number like 0.22, or off.", 2)
    with DaemonClient.connect() as client:
        result = client.call(requests.hosts_price(alias=host, price_per_hour=price))
    if json:
        print_json(result)
    elif result.price_per_hour is None:
        note(f"{host} has no price now")
    else:
        note(f"{host} costs {result.price_per_hour:g} an hour")


def _host_cost_cells(host: Any) -> list[str]:
    """COST and IDLE: what the host cost while rtrain saw it up; what of it was idle."""
    if host.cost is None:
        return ["-", "-"]
    idle = f"{cost_text(host.idle_cost)} ({human_duration(host.idle_seconds)})"
    return [cost_text(host.cost), idle]


def _partitions_text(host: Any) -> str:
    """A Slurm host's GPUs, per partition as its last preflight saw them: `slurm gpu 1/2 free`."""
    if getattr(host, "scheduler", None) != "slurm":
        return ""
    parts = [f"{p.name} {p.free_gpus}/{p.gpus} free" for p in host.partitions]
    return "slurm" + (": " + ", ".join(parts) if parts else "")
