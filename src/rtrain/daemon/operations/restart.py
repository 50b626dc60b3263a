"""run/restart: an ended run's recorded command again, in its own directory, as a new attempt.

The far side's meta.json is the record: the command, python, env, setup and the names of
the secrets the run was started with (never their values), so a restart works whatever the
registry holds. A trainer that checkpoints into its run directory resumes from there.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import msgspec

from rtrain.daemon.environments.run_environment import environment_python
from rtrain.daemon.launchers.launcher import Launcher
from rtrain.daemon.remote.contract import launch_scripts, run_scripts
from rtrain.daemon.remote.contract.launch_scripts import Launched
from rtrain.daemon.transfer import whole_file
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import (
    DEFAULT_PYTHON,
    AfterRun,
    Attempt,
    RestartParams,
    RestartResult,
    RunInfo,
    RunNode,
    RunRef,
    RunState,
)
from rtrain.protocol.run_states import is_live

from .command_template import (
    CONFIG_NAME,
    TORCHRUN_WORD,
    check_template,
    check_words,
    expand,
)
from .context import DaemonState, now
from .restart_code import CodeForRestart, RunPlace, code_for_restart
from .run_limits import Limits, launch_line
from .run_proof import refuse_unless_run
from .start import RESERVED
from .status import status as run_status


class RecordedLaunch(msgspec.Struct):
    """What launch.sh wrote into meta.json (the keys a restart needs)."""

    command: list[str]
    python: str = DEFAULT_PYTHON
    attempt: int = 1
    inputs: dict[str, str] = {}
    env: dict[str, str] = {}
    setup: str | None = None
    wrapper_words: int = 0
    secret_names: list[str] = []
    attempts: list[Attempt] = []
    # What the start filled `{gpus}` and `{dataset}` with (older runs did not record them).
    gpus: int | None = None
    dataset: str | None = None
    # How it was launched (older runs did not record it).
    launcher: str | None = None
    # rtrain's own files of the run (the gate, the watcher): the input cache's gc keeps them.
    rtrain_inputs: dict[str, str] = {}
    # A batch job's sbatch options, asked again as they were.
    sbatch: list[str] = []
    # The run's limits: every attempt keeps them.
    limits: Limits | None = None
    # A run across hosts: its nodes, node 0 first.
    nodes: list[RunNode] = []
    # The code directory it was shipped from, on the machine that started it.
    code_dir: str | None = None
    # It runs in an environment built from a lock (docs/environments.md).
    environment: bool = False
    # The container image it runs in (docs/containers.md): every attempt keeps it.
    image: str | None = None
    container_runtime: str | None = None


@dataclass(frozen=True)
class _RestartPlan:
    """What a restart found before it launches anything: the run as it is, its record (with
    the code a `--code` shipped), and the new attempt's number and trainer command."""

    current: RunInfo
    transport: Transport
    run_dir: str
    recorded: RecordedLaunch
    code: CodeForRestart
    number: int
    trainer: list[str]


async def restart(ops: DaemonState, p: RestartParams, cause: str | None = None) -> RestartResult:
    """`cause`: why the daemon itself starts this attempt (a retry), recorded with it."""
    plan = await _plan(ops, p)
    if p.dry_run:
        return RestartResult(
            run=plan.current,
            command=plan.trainer,
            attempt=plan.number,
            setup=plan.recorded.setup,
            dry_run=True,
            code_differs=plan.code.differs,
        )
    size = await run_scripts.log_lines(plan.transport, plan.run_dir, p.run_id, 0)
    launcher, launched, attempt, limits = await _launch(ops, p, plan, cause)
    current = plan.current
    base = current if current.command else _from_record(current, plan.recorded, plan.run_dir)
    run = _record_attempt(ops, p, limits.on_run(base), launched, attempt)
    return RestartResult(
        run=run,
        pid=launched.pid,
        log_offset=size.offset or 0,
        command=plan.trainer,
        attempt=plan.number,
        setup=plan.recorded.setup,
        code_shipped=plan.code.shipped,
        code_differs=plan.code.differs,
    )


async def _plan(ops: DaemonState, p: RestartParams) -> _RestartPlan:
    """Validate, read the run's record, and ship the changed code (`p.code`)."""
    run_dir = ops.run_dir(p.host, p.run_id, p.workdir)
    _check_asked(p)
    current = await _restartable(ops, p)
    transport = await ops.transport(p.host)
    recorded = await _recorded_launch(transport, run_dir, p)
    _refuse_missing_secrets(p, recorded)
    place = RunPlace(transport, run_dir, p.run_id, ops.hosts.config.host(p.host).channels)
    recorded, code = await _with_code(place, p, recorded)
    trainer = _trainer_command(p, recorded, current.remote_dir or run_dir)
    return _RestartPlan(current, transport, run_dir, recorded, code, recorded.attempt + 1, trainer)


async def _launch(
    ops: DaemonState, p: RestartParams, plan: _RestartPlan, cause: str | None
) -> tuple[Launcher, Launched, _NewAttempt, Limits]:
    """The new attempt launched in the run's directory by its launcher, or refused."""
    recorded, number = plan.recorded, plan.number
    command = [*recorded.command[: recorded.wrapper_words], *plan.trainer]
    earlier = _ended_attempts(plan.current, recorded)
    limits = recorded.limits or Limits()
    nodes = plan.current.nodes or recorded.nodes
    meta = _meta(recorded, earlier, limits, nodes)
    if nodes:
        launcher: Launcher = ops.nodes_launcher(nodes)
    else:
        launcher = _launcher(ops, p.host, plan.current.launcher or recorded.launcher, command)
    meta["launcher"] = launcher.name
    stdin = launch_scripts.launch_stdin(
        p.secrets,
        recorded.env,
        recorded.setup,
        meta,
        attempt=number,
        wrapper=recorded.wrapper_words,
        limits=launch_line(limits, launcher.default_grace) if launcher.runs_on_host else None,
    )
    launched = await launcher.launch(plan.run_dir, p.run_id, recorded.python, command, stdin)
    refuse_unless_run(launched, p.host, p.run_id, plan.run_dir, "nothing was restarted")
    _refuse_unlaunched(p, launched, number)
    attempt = _NewAttempt(number, plan.trainer, launcher.name, earlier, nodes, cause)
    return launcher, launched, attempt, limits


async def _with_code(
    place: RunPlace, p: RestartParams, recorded: RecordedLaunch
) -> tuple[RecordedLaunch, CodeForRestart]:
    """The run's record once `p.code` has shipped what changed (restart_code.py)."""
    code = await code_for_restart(
        place, p.code, (recorded.inputs, recorded.code_dir), RESERVED, dry_run=p.dry_run
    )
    return msgspec.structs.replace(recorded, inputs=code.inputs, code_dir=code.directory), code


def _check_asked(p: RestartParams) -> None:
    """A new command is checked as far as it can be before anything reaches the host; what
    it may name ({dataset}, {config}) once the run's record is read."""
    for name in p.secrets:
        validation.secret_name(name)
    if p.command is not None:
        check_template(p.command, has_dataset=True, has_config=True)
    check_words(p.append, has_dataset=True, has_config=True)
    if p.command is None and TORCHRUN_WORD in p.append:
        raise app_error(
            Kind.INVALID_COMMAND,
            "{torchrun} starts a command; give a whole new command after `--` instead.",
        )


async def _restartable(ops: DaemonState, p: RestartParams) -> RunInfo:
    """The run as it is now, refused unless it has ended and was launched."""
    if (p.host, p.run_id) in ops.starting:
        raise _active(p, "is still being started")
    ref = RunRef(host=p.host, run_id=p.run_id, workdir=p.workdir)
    current = (await run_status(ops, ref)).run
    if is_live(current.state):
        raise _active(p, f"is {current.state}; stop it first (rtrain stop {p.host} {p.run_id})")
    if current.state == "unknown":
        raise app_error(
            Kind.HOST_UNREACHABLE,
            f"cannot restart {p.run_id}: whether it still runs on {p.host} is not known "
            f"({current.reason or 'the host did not answer'}).",
        )
    if current.state == "lost" and current.reason == "never launched":
        raise _never_launched(p)
    return current


def _refuse_missing_secrets(p: RestartParams, recorded: RecordedLaunch) -> None:
    missing = [name for name in recorded.secret_names if name not in p.secrets]
    if missing:
        given = " ".join(f"--secret {name}" for name in missing)
        raise app_error(
            Kind.INVALID_SECRET,
            f"{p.run_id} was started with {given}; secrets are never stored, so give "
            f"them again: rtrain restart {p.host} {p.run_id} {given}.",
        )


class _CarriedMeta(msgspec.Struct, omit_defaults=True):
    """The keys of meta.json every attempt carries over as they were (a default: not written)."""

    inputs: dict[str, str]
    env: dict[str, str] = {}
    setup: str | None = None
    wrapper_words: int = 0
    secret_names: list[str] = []
    rtrain_inputs: dict[str, str] = {}
    gpus: int | None = None
    dataset: str | None = None
    sbatch: list[str] = []
    image: str | None = None
    container_runtime: str | None = None
    code_dir: str | None = None
    environment: bool = False


_CARRIED = _CarriedMeta.__struct_fields__


def _meta(
    recorded: RecordedLaunch, earlier: list[Attempt], limits: Limits, nodes: list[RunNode]
) -> dict[str, object]:
    """The new attempt's meta.json: the recorded launch, carried over (less the launcher),
    its attempts so far, its limits where watched and its nodes where it has them."""
    carried = _CarriedMeta(**{name: getattr(recorded, name) for name in _CARRIED})
    meta: dict[str, object] = msgspec.to_builtins(carried)
    meta["attempts"] = [msgspec.to_builtins(a) for a in earlier]
    if limits.watched:
        meta["limits"] = msgspec.to_builtins(limits)
    if nodes:
        meta["nodes"] = [msgspec.to_builtins(node) for node in nodes]
    return meta


def _refuse_unlaunched(p: RestartParams, launched: Launched, number: int) -> None:
    if launched.running:
        raise _active(p, "is running again (started meanwhile)")
    if launched.already_launched:
        raise _active(p, f"is being restarted already (attempt {number} was claimed)")
    if launched.pid is None and launched.job_id is None:
        why = str(launched.error or "") or launched.error_text
        raise app_error(Kind.REMOTE_FAILED, f"{p.host}: {p.run_id} did not restart: {why}")


@dataclass(frozen=True)
class _NewAttempt:
    """The attempt a restart launched, and what the run keeps of it."""

    number: int
    trainer: list[str]
    launcher: str
    earlier: list[Attempt]
    nodes: list[RunNode]
    cause: str | None


def _record_attempt(
    ops: DaemonState, p: RestartParams, base: RunInfo, launched: Launched, attempt: _NewAttempt
) -> RunInfo:
    """The registry's run, now on its new attempt."""
    started_at = max(launched.started_at or now(), now() - 1)
    # A batch job waits for the scheduler first; the monitor says when it runs.
    state: RunState = "queued" if launched.job_id is not None else "running"
    after = base.after
    if after is not None and after.terminated_at is None:
        # What was to follow the run follows this attempt: a restart is a second chance.
        after = AfterRun(fetch=after.fetch, into=after.into, terminate=after.terminate)
        ops.registry.set_after_run(p.host, p.run_id, after)
    return ops.record(
        msgspec.structs.replace(
            base,
            state=state,
            command=attempt.trainer,
            launcher=attempt.launcher,
            started_at=started_at,
            last_seen=now(),
            exit_code=None,
            signal=None,
            reason=f"submitted as Slurm job {launched.job_id}" if launched.job_id else None,
            job_id=launched.job_id or base.job_id,
            scheduler_state=None,
            stalled_since=None,
            stopped_by=None,
            after=after,
            nodes=attempt.nodes,
            attempts=[
                *attempt.earlier,
                Attempt(
                    number=attempt.number,
                    state=state,
                    started_at=started_at,
                    running_at=started_at if state == "running" else None,
                    cause=attempt.cause,
                ),
            ],
        )
    )


def _launcher(ops: DaemonState, host: str, recorded: str | None, command: list[str]) -> Launcher:
    """The launcher of the new attempt: a batch job stays one; a run of the host's own runs
    torchrun or not as its (perhaps new) command says; a run that recorded none, as the
    host's config says now."""
    return ops.run_launcher(host, recorded, command, again=True)


def _trainer_command(p: RestartParams, recorded: RecordedLaunch, run_dir: str) -> list[str]:
    """The trainer's words of the new attempt: the recorded ones, or `p.command`, with
    `p.append` after them; placeholders filled with what the start filled them with."""
    trainer = recorded.command[recorded.wrapper_words :]
    if p.command is None and not p.append:
        return trainer
    words = [*(p.command or []), *p.append]
    check_words(
        words,
        has_dataset=recorded.dataset is not None,
        has_config=CONFIG_NAME in recorded.inputs,
    )
    gpus = recorded.gpus
    if gpus is None:
        if any(TORCHRUN_WORD == w or "{gpus}" in w for w in words):
            raise app_error(
                Kind.INVALID_COMMAND,
                f"{p.run_id} was started by an older rtrain, which did not record its GPU "
                "count; write the number instead of {gpus} or {torchrun}.",
            )
        gpus = 1

    python = environment_python(run_dir) if recorded.environment else recorded.python

    def fill(template: list[str]) -> list[str]:
        return expand(template, python=python, dataset=recorded.dataset, run_dir=run_dir, gpus=gpus)

    if p.command is not None:
        trainer = fill(p.command)
    return [*trainer, *fill(p.append)]


def _never_launched(p: RestartParams) -> RpcError:
    return app_error(
        Kind.RUN_NOT_FOUND,
        f"cannot restart {p.run_id} on {p.host}: it was never launched, so there is no "
        f"command to run again; remove it (rtrain rm {p.host} {p.run_id}) and start anew.",
    )


def _active(p: RestartParams, why: str) -> RpcError:
    return app_error(Kind.RUN_ACTIVE, f"cannot restart {p.run_id} on {p.host}: it {why}.")


async def _recorded_launch(transport: Transport, run_dir: str, p: RestartParams) -> RecordedLaunch:
    fd, name = tempfile.mkstemp(prefix="rtrain-meta-")
    os.close(fd)
    try:
        # rtrain's own record; the run dir's meta.json for a run an older rtrain launched
        # (a trainer may have written its own meta.json there since).
        for record in (".rtrain/meta.json", "meta.json"):
            try:
                await whole_file.download(transport, run_dir, record, Path(name))
                break
            except RpcError as error:
                if error.kind not in (Kind.REMOTE_FILE_MISSING, Kind.TRANSFER_FAILED):
                    raise
        else:
            raise _never_launched(p)
        data = await asyncio.to_thread(Path(name).read_bytes)
    finally:
        os.unlink(name)
    try:
        return msgspec.json.decode(data, type=RecordedLaunch)
    except msgspec.DecodeError as error:
        raise app_error(
            Kind.REMOTE_FAILED,
            f"{p.host}: the meta.json of {p.run_id} cannot be read ({error}); "
            "it cannot be restarted.",
        ) from None


def _ended_attempts(current: RunInfo, recorded: RecordedLaunch) -> list[Attempt]:
    """Every attempt so far, the last one with the outcome the run ended with."""
    if current.attempts:
        return list(current.attempts)
    last = Attempt(
        number=recorded.attempt,
        state=current.state,
        started_at=current.started_at,
        ended_at=current.last_seen or now(),
        exit_code=current.exit_code,
        reason=current.reason,
    )
    return [*recorded.attempts, last]


def _from_record(current: RunInfo, recorded: RecordedLaunch, run_dir: str) -> RunInfo:
    """A run the registry did not know in full, described by its meta.json."""
    return msgspec.structs.replace(
        current,
        remote_dir=run_dir,
        log_path=f"{run_dir}/train.log",
        command=recorded.command,
        env=recorded.env,
        setup=recorded.setup,
    )
