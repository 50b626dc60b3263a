"""rtrain's Python API: the same operations as the CLI, through the same daemon.

    from rtrain import RemoteRunner

    runner = RemoteRunner(alias="gpubox")
    verdict = runner.preflight(expect_gpus=1)
    if not verdict.ok:
        raise SystemExit(verdict.why_not())
    run = runner.start(config_path="config.yaml", dataset_path="data/train.jsonl")
    runner.tail(run, on_line=print)
    print(runner.status(run))                 # running | completed | failed (exit N) | ...
    runner.fetch(run, remote_rel="lora_model", dest="./out")
    runner.stop(run)                          # True only if something was killed
    runner.restart(run)                       # the same command again; a checkpoint resumes
    runner.remove(run)                        # its far directory and record, once it ended
    runner.guard(idle="30m", then="runpodctl remove pod $RUNPOD_POD_ID")  # the host's net
    runner.terminate()                        # the host's terminate command, now

Sweeps (one run per point of a grid, in a pool) are `rtrain.sweep(...)` and its
`RemoteSweep` handle (client/sweep_api.py, docs/sweeps.md).

Every method opens its own short conversation with the daemon, so a runner rebuilt from
just a host alias and a run id reattaches: `runner.run("run-1787667005")`.

Errors (all RtrainError; a refusal or failure of the daemon's is a RemoteError, whose `kind`
is the protocol's stable error kind, docs/protocol.md):

- DaemonUnavailable: no daemon answered and none could be started.
- HostUnreachable (a RemoteError): the host did not answer, timed out or refused the login;
  ask again once it answers.
- HostNotReady (a RemoteError): the host cannot take the run as asked, e.g. too few GPUs
  free (`start(..., wait=True)` queues instead).
- RunRefused (a RemoteError): the run cannot be acted on as asked (it is still running, its
  id is taken, the directory is not a run of rtrain's); nothing was done.
- BadRequest, LoginRequired, HostRefused, NotFound, OperationFailed, DaemonMismatch: the
  other meanings. Every error kind has a class of its own under its meaning (`RunActive`,
  `RunExists`, `InvalidRunId`, `AuthFailed`, ...: docs/architecture.md); a kind this version
  does not know is a plain RemoteError.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from rtrain.protocol import requests
from rtrain.protocol.durations import parse_duration

# At run time too: the public API's annotations resolve (tests/test_public_api.py).
from rtrain.protocol.launcher_options import LauncherOptions
from rtrain.protocol.limit_words import parse_limit
from rtrain.protocol.requests import Call
from rtrain.protocol.run_states import RetryOn

from .daemon_client import DaemonClient
from .errors import (
    AuthFailed,
    BadRequest,
    DaemonMismatch,
    DaemonUnavailable,
    DiskFull,
    HostBusy,
    HostKeyChanged,
    HostNotReady,
    HostRefused,
    HostUnreachable,
    InvalidCommand,
    InvalidHost,
    InvalidModel,
    InvalidPath,
    InvalidRequirement,
    InvalidRunId,
    InvalidSecret,
    InvalidWorkdir,
    LocalFileMissing,
    LocalIo,
    LoginRequired,
    NotARun,
    NoTerminateCommand,
    NotFound,
    NotImplementedByDaemon,
    OperationFailed,
    PathOutsideRun,
    PortInUse,
    PortNotListening,
    ProtocolVersionMismatch,
    RemoteError,
    RemoteFailed,
    RemoteFileMissing,
    RtrainError,
    RunActive,
    RunExists,
    RunNotFound,
    RunRefused,
    StopRefused,
    TimedOut,
    TransferFailed,
)
from .run_state_text import state_text

if TYPE_CHECKING:
    from rtrain.protocol import requests as wire

    WireOptions = wire.ProcessOptions | wire.TorchrunOptions | wire.NodesOptions | wire.SlurmOptions
    # Answers as the daemon sent them: a type checker reads them by the protocol's view of
    # each, and at run time they are that object (fields read as attributes).
    GuardAnswer = wire.GuardResultAnswer
    TerminateAnswer = wire.TerminateResultAnswer
else:
    from rtrain.protocol.wire_object import WireObject as GuardAnswer
    from rtrain.protocol.wire_object import WireObject as TerminateAnswer

# The answer a call promises (requests.py's `...Answer` views).
R = TypeVar("R")

__all__ = [
    "AuthFailed",
    "BadRequest",
    "DaemonMismatch",
    "DaemonUnavailable",
    "DiskFull",
    "HostBusy",
    "HostKeyChanged",
    "HostNotReady",
    "HostRefused",
    "HostUnreachable",
    "InvalidCommand",
    "InvalidHost",
    "InvalidModel",
    "InvalidPath",
    "InvalidRequirement",
    "InvalidRunId",
    "InvalidSecret",
    "InvalidWorkdir",
    "LocalFileMissing",
    "LocalIo",
    "LoginRequired",
    "NoTerminateCommand",
    "NotARun",
    "NotFound",
    "NotImplementedByDaemon",
    "OperationFailed",
    "PathOutsideRun",
    "PortInUse",
    "PortNotListening",
    "ProtocolVersionMismatch",
    "RemoteError",
    "RemoteFailed",
    "RemoteFileMissing",
    "RemoteHost",
    "RemotePreflight",
    "RemoteRun",
    "RemoteRunner",
    "RtrainError",
    "RunActive",
    "RunExists",
    "RunNotFound",
    "RunRefused",
    "StopRefused",
    "TimedOut",
    "TransferFailed",
]


@dataclass(frozen=True)
class RemoteHost:
    """One SSH destination: an alias from your ssh config (or `local`)."""

    alias: str
    # None: the host's `python` / `workdir` from the user config, else python3 / ~/.rtrain.
    python: str | None = None
    workdir: str | None = None


@dataclass(frozen=True)
class RemoteRun:
    """A handle to one run; enough to reattach from anywhere."""

    host: str
    run_id: str
    remote_dir: str | None = None
    log_path: str | None = None


@dataclass(frozen=True)
class RemotePreflight:
    """A host's readiness verdict."""

    ok: bool
    reasons: list[str]
    transport: str | None = None
    python_version: str | None = None
    gpus: list[str] = field(default_factory=list)
    # Every finding as the CLI prints it ("topic: text"), and the daemon's whole answer.
    findings: list[str] = field(default_factory=list)
    suggested_python: str | None = None
    result: Any = None

    def why_not(self) -> str:
        return "; ".join(self.reasons) if self.reasons else "ready"


class RemoteRunner:
    def __init__(
        self, alias: str = "local", python: str | None = None, workdir: str | None = None
    ) -> None:
        self.host = RemoteHost(alias, python, workdir)

    def _call(self, call: Call[R], on_notification: Callable[[str, Any], None] | None = None) -> R:
        with DaemonClient.connect(name="rtrain-python") as client:
            return client.call(call, on_notification=on_notification)

    def run(self, run_id: str) -> RemoteRun:
        """A handle for an existing run id (nothing is checked until it is used)."""
        return RemoteRun(self.host.alias, run_id)

    def preflight(
        self,
        expect_gpus: int = 1,
        *,
        requires: Sequence[str] = (),
        inputs: Sequence[str | Path] = (),
        hf_models: Sequence[str] = (),
        secrets: Mapping[str, str] | None = None,
        config_path: str | Path | None = None,
        code_dir: str | Path | None = None,
        include: Sequence[str] = (),
        follow_links: bool = False,
        requirements: str | Path | None = None,
        image: str | None = None,
    ) -> RemotePreflight:
        """Can the host train? `requires`: packages (`transformers>=5`); `inputs`: local
        paths start would ship (checked against the disk), and `config_path` and `code_dir`
        (with `include` and `follow_links`) counted as start ships them; `hf_models`: Hub
        models the host must download, with `secrets={"HF_TOKEN": ...}` as the token to
        try; `requirements`: a pip requirements file whose environment is built now (or
        found built), as start would build it (docs/environments.md); `image`: a container
        image, its runtime, presence and GPUs checked (docs/containers.md)."""
        result = self._call(
            requests.host_preflight(
                host=self.host.alias,
                gpus=expect_gpus,
                python=self.host.python,
                workdir=self.host.workdir,
                requires=list(requires) or None,
                inputs=[str(Path(path).resolve()) for path in inputs] or None,
                config=str(Path(config_path).resolve()) if config_path is not None else None,
                code=str(Path(code_dir).resolve()) if code_dir is not None else None,
                include=list(include) or None,
                follow_links=follow_links or None,
                hf_models=list(hf_models) or None,
                secrets=dict(secrets) if secrets else None,
                requirements=str(Path(requirements).resolve()) if requirements else None,
                image=image,
            )
        )
        return RemotePreflight(
            ok=result.ok,
            reasons=list(result.reasons),
            transport=result.transport,
            python_version=result.python_version,
            gpus=[g.name for g in result.gpus],
            findings=[f"{f.topic}: {f.text}" for f in result.findings],
            suggested_python=result.suggested_python,
            result=result,
        )

    def start(
        self,
        config_path: str | Path | None = None,
        dataset_path: str | Path | None = None,
        run_id: str | None = None,
        gpus: int = 1,
        command: Sequence[str] | None = None,
        secrets: Mapping[str, str] | None = None,
        *,
        code_dir: str | Path | None = None,
        datasets: Sequence[str | Path] = (),
        env: Mapping[str, str] | None = None,
        setup: str | None = None,
        max_duration: str | None = None,
        stall_after: str | None = None,
        on_stall: Literal["flag", "stop"] | None = None,
        then_fetch: str | None = None,
        then_fetch_into: str | Path = ".",
        then_terminate: bool = False,
        include: Sequence[str] = (),
        follow_links: bool = False,
        launcher: LauncherOptions | None = None,
        wait: bool = False,
        share_gpus: bool = False,
        retry: int | None = None,
        retry_on: RetryOn | None = None,
        priority: int = 0,
        requirements: str | Path | None = None,
        image: str | None = None,
        sync: Sequence[Literal["mlflow", "wandb"]] = (),
        sync_to: str | None = None,
        reverse: Sequence[int] = (),
    ) -> RemoteRun:
        """Ship and launch; returns as soon as the trainer runs. Raises RemoteError.
        A runner of `@POOL` (`RemoteRunner("@lab")`) places the run on a host of that pool
        of config.toml that can give it `gpus` now, else queues it there, before runs of a
        lower `priority` (docs/pools.md); the run's `host` says which (`@POOL` while queued).

        `code_dir`'s files land in the run directory (its .rtrainignore, else .gitignore, is
        honoured; `include` patterns, gitignore syntax, ship what they match anyway; its
        links that leave it ship as links unless `follow_links`); each of `dataset_path`
        and `datasets` (files or directories) lands under its own name; `env` is for the
        setup step and the trainer (recorded: not for secrets); `setup` is a shell command
        run in the run directory first.
        `max_duration` and `stall_after` are durations (`6h`, `30m`, `off`), kept by the host
        (docs/cost-safety.md); a bad one raises ValueError before anything is sent.
        `then_fetch` (into `then_fetch_into`) and `then_terminate`: what the daemon does once
        the run completes, with this process gone or not (docs/cli.md, "Train → fetch →
        terminate"); `status --json`'s `after` tells how far it got.
        `launcher`: how the run is run, with that launcher's own options (default: as the
        host's config.toml says; torchrun when the command has `{torchrun}`):
        `rtrain.ProcessOptions()`, `rtrain.TorchrunOptions()`;
        `rtrain.SlurmOptions(partition=, time=, nodes=, requeue=, signal_before_timeout=,
        torchrun=)` on Slurm hosts (docs/slurm.md; each overrides the host's default, `time`
        is the job's time limit, `2:00:00`, `signal_before_timeout` the seconds before it at
        which the trainer gets SIGUSR2); `rtrain.NodesOptions(hosts=, nodes=, master_addr=)`
        for a run across hosts (docs/multinode.md: every node's ssh alias, this runner's host
        first, `nodes` their count, a `{torchrun}` command; `master_addr` the address the
        others reach the first at, default its HostName).
        `wait`: too few GPUs free queues the run instead of refusing it; `share_gpus`: GPUs
        busy with processes that are not rtrain runs count as free.
        `retry`: attempts the daemon starts by itself after the run ends lost (`retry_on`
        `failed`: after a failure too); default: the host's config.toml `retry`, else none.
        `requirements`: a pip requirements file; `{python}` is then a virtual environment
        built from it on the host once and reused (default: the host's config.toml
        `requirements`, else `requirements.txt` in `code_dir`; "" for none;
        docs/environments.md).
        `image`: a container image the setup and the trainer run in, in the host's podman or
        docker, `{python}` its python3 (on Slurm: pyxis' `--container-image`; default: the
        host's config.toml `image`; "" for none; docs/containers.md).
        `sync`: trackers whose files of the run reach this machine's tracker while it trains
        (`mlflow`: its mlruns/ into `sync_to`, default this process's MLFLOW_TRACKING_URI;
        `wandb`: its offline runs, wandb/offline-run-*, into the W&B this machine is logged
        in to, with `wandb sync`).
        `reverse`: ports of this machine's 127.0.0.1 (a server listening here) that the
        run's processes reach at the host's 127.0.0.1, at the same number where it is free
        there, from before the trainer starts until the run ends, and again on a restart
        (docs/trackers.md)."""
        limits = [
            None if text is None else parse_limit(text, what)
            for text, what in (
                (max_duration, "a maximum duration"),
                (stall_after, "a stall period"),
            )
        ]
        call = requests.run_start(
            host=self.host.alias,
            config=str(Path(config_path).resolve()) if config_path is not None else None,
            dataset=str(Path(dataset_path).resolve()) if dataset_path is not None else None,
            datasets=[str(Path(d).resolve()) for d in datasets] or None,
            code=str(Path(code_dir).resolve()) if code_dir is not None else None,
            include=list(include) or None,
            follow_links=follow_links or None,
            env=dict(env) if env else None,
            setup=setup,
            requirements=(
                None
                if requirements is None
                else str(Path(requirements).resolve())
                if str(requirements)
                else ""
            ),
            image=image,
            run_id=run_id,
            gpus=gpus,
            python=self.host.python,
            workdir=self.host.workdir,
            command=list(command) if command is not None else None,
            secrets=dict(secrets) if secrets else None,
            max_duration=limits[0],
            stall_after=limits[1],
            on_stall=on_stall,
            then_fetch=then_fetch,
            then_fetch_into=str(Path(then_fetch_into).resolve()) if then_fetch else None,
            then_terminate=then_terminate or None,
            launcher=_wire_options(launcher),
            wait=wait or None,
            share_gpus=share_gpus or None,
            retry=retry,
            retry_on=retry_on,
            priority=priority or None,
            sync=list(sync) or None,
            sync_to=(sync_to or os.environ.get("MLFLOW_TRACKING_URI") or None) if sync else None,
            reverse=list(reverse) or None,
        )
        run = self._call(call).run
        return RemoteRun(run.host, run.run_id, run.remote_dir, run.log_path)

    def tail(
        self, run: RemoteRun | str, on_line: Callable[[str], None] = print, follow: bool = True
    ) -> str:
        """Call `on_line` with each log line (no newline); returns the final state text."""
        handle = self._handle(run)
        pending = ""

        def on_log(method: str, params: Any) -> None:
            nonlocal pending
            if method == "run/log":
                *lines, pending = (pending + params.text).split("\n")
                for line in lines:
                    on_line(line)

        result = self._call(
            requests.run_tail(host=handle.host, run_id=handle.run_id, follow=follow), on_log
        )
        if pending:
            on_line(pending)
        return state_text(result.run)

    def status(self, run: RemoteRun | str) -> str:
        handle = self._handle(run)
        return state_text(
            self._call(requests.run_status(host=handle.host, run_id=handle.run_id)).run
        )

    def fetch(self, run: RemoteRun | str, remote_rel: str, dest: str | Path = ".") -> list[Path]:
        """Copy a file or directory of the run into `dest`; returns the verified local files."""
        handle = self._handle(run)
        result = self._call(
            requests.run_fetch(
                host=handle.host,
                run_id=handle.run_id,
                path=remote_rel,
                dest=str(Path(dest).resolve()),
            )
        )
        return [Path(f.local_path) for f in result.files]

    def stop(self, run: RemoteRun | str, force: bool = False, grace: float | None = None) -> bool:
        """True only if something was running and is now gone; RemoteError if it survived.
        `grace` None: 10 s, or 35 s for a torchrun run."""
        handle = self._handle(run)
        result = self._call(
            requests.run_stop(host=handle.host, run_id=handle.run_id, force=force, grace=grace)
        )
        return bool(result.outcome == "stopped")

    def restart(
        self,
        run: RemoteRun | str,
        secrets: Mapping[str, str] | None = None,
        *,
        command: Sequence[str] | None = None,
        append: Sequence[str] = (),
        code_dir: str | Path | None = None,
    ) -> RemoteRun:
        """Start an ended run's recorded command again in its own directory (a new attempt;
        a trainer that checkpoints resumes), or `command` (placeholders as for start), with
        `append`'s words added (`["--init_from=resume"]`). `code_dir`: its files that differ
        from what the run holds are shipped into the run directory first (the fix; outputs
        and checkpoints stay). A run started with secrets needs them again. Returns as soon
        as the trainer runs; raises RemoteError (e.g. while it runs)."""
        handle = self._handle(run)
        call = requests.run_restart(
            host=handle.host,
            run_id=handle.run_id,
            secrets=dict(secrets) if secrets else None,
            command=list(command) if command is not None else None,
            append=list(append) or None,
            code=str(Path(code_dir).resolve()) if code_dir is not None else None,
        )
        done = self._call(call).run
        return RemoteRun(done.host, done.run_id, done.remote_dir, done.log_path)

    def remove(self, *runs: RemoteRun | str) -> list[str]:
        """Remove ended runs: their directories on the host and rtrain's record of them.
        Nothing is removed if any of them runs (RemoteError). Returns the removed run ids."""
        handles = [self._handle(run) for run in runs]
        call = requests.run_remove(host=self.host.alias, run_ids=[h.run_id for h in handles])
        return [r.run_id for r in self._call(call).removed]

    def guard(
        self,
        idle: str | None = None,
        then: str | None = None,
        *,
        off: bool = False,
        ignore_sessions: bool = False,
    ) -> GuardAnswer:
        """Arm the host's guard (`idle` and `then` both: run `then` on the host once it has
        been idle that long, laptop gone or not), disarm it (`off`), or, with neither, read
        it. Returns the guard's state (protocol GuardResult; docs/guard.md). A bad duration
        raises ValueError before anything is sent."""
        if off and (idle or then):
            raise ValueError("give off=True alone, or idle and then to arm the guard.")
        if (idle is None) != (then is None):
            raise ValueError("arming the guard needs both idle (e.g. '30m') and then (a command).")
        action: Literal["arm", "off", "show"] = "off" if off else "arm" if idle else "show"
        call = requests.host_guard(
            host=self.host.alias,
            action=action,
            workdir=self.host.workdir,
            idle_seconds=parse_duration(idle, what="an idle period") if idle else None,
            command=then,
            ignore_sessions=ignore_sessions or None,
        )
        return self._call(call)

    def terminate(self, force: bool = False) -> TerminateAnswer:
        """Run the host's terminate command now (config.toml's `terminate`, else the guard's);
        RemoteError while a run or a transfer keeps the host busy, unless `force`. Returns
        protocol TerminateResult: check `outcome` and `exit_code`."""
        call = requests.host_terminate(
            host=self.host.alias, workdir=self.host.workdir, force=force or None
        )
        return self._call(call)

    def _handle(self, run: RemoteRun | str) -> RemoteRun:
        return self.run(run) if isinstance(run, str) else run


def _wire_options(options: LauncherOptions | None) -> WireOptions | None:
    """A launcher's options object as the start message carries it (`kind` and camelCase)."""
    if options is None:
        return None
    import msgspec

    return cast("WireOptions", msgspec.to_builtins(options))
