"""run/start: validate everything first, ship the inputs checksummed, launch detached."""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Literal

import msgspec

from rtrain.daemon.launchers.torchrun import (
    FAILURE_FILE,
    RANKS_FILE,
    TORCHRUN_LOGS,
    relay_source,
    uses_relay,
)
from rtrain.daemon.remote import contract
from rtrain.daemon.remote.contract import Launched
from rtrain.daemon.remote.error_words import ErrorWord
from rtrain.daemon.remote.trainer_bundle import demo_trainer_bundle
from rtrain.daemon.ssh.failures import answer_may_be_lost
from rtrain.daemon.ssh.transport import Transport
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import (
    DEFAULT_PYTHON,
    DEFAULT_WORKDIR,
    AfterRun,
    Attempt,
    RunInfo,
    RunState,
    ShippedFile,
    StartParams,
    StartResult,
    byte_progress,
)

from .command_template import (
    CONFIG_NAME,
    TORCHRUN_WORD,
    check_template,
    check_words,
    expand,
)
from .context import Ops, chosen, now
from .gpu_sharing import GATE_FILE, GpuPlan, gate_file, gate_prefix, plan_gpus
from .notifier import Notifier
from .run_inputs import Inputs, LocalFile, gather
from .run_limits import (
    LIMITS_FILE,
    STOP_FILE,
    WATCHER_FILES,
    Limits,
    chosen_limits,
    launch_line,
    slurm_time,
    watcher_files,
)
from .scheduler_options import check_scheduler_options
from .shipping import ShipProgress, code_report, ship_files
from .status import refresh
from .then_options import after_run_plan

log = logging.getLogger(__name__)
DEMO_TRAINER = "demo_trainer.py"
# Names the run dir already uses; a dataset may not take them.
RESERVED = {
    CONFIG_NAME,
    DEMO_TRAINER,
    "train.log",
    "train.pid",
    "status",
    "meta.json",
    "stop_requested",
    "launch.sh",
    "rtrain-run",
    ".rtrain-run",
    "rtrain-steps",
    TORCHRUN_LOGS,
    RANKS_FILE,
    FAILURE_FILE,
    GATE_FILE,
    "queued",
    "status.tmp",
    "train.pid.tmp",
    "meta.json.tmp",
    "setup_failed",
    "program_missing",
    LIMITS_FILE,
    STOP_FILE,
    *WATCHER_FILES,
}
# The registry's word for a run whose inputs are still being shipped.
BEING_STARTED = "being started"
# How long a launch that got there first may take to show its trainer (launch.sh waits 10 s).
LAUNCH_SETTLES = 12.0


def new_run_id() -> str:
    return f"run-{int(time.time())}-{secrets.token_hex(2)}"


async def start(ops: Ops, p: StartParams, ctx: Notifier) -> StartResult:
    # Everything a user can get wrong is refused here, before any ssh runs.
    validation.host(p.host)
    run_id = validation.run_id(p.run_id) if p.run_id is not None else new_run_id()
    settings = ops.hosts.config.host(p.host)
    workdir = validation.workdir(chosen(p.workdir, settings.workdir, DEFAULT_WORKDIR))
    python = validation.python(chosen(p.python, settings.python, DEFAULT_PYTHON))
    for name in p.secrets:
        validation.secret_name(name)
        if name.startswith("RTRAIN_"):
            # The far side keeps RTRAIN_* for itself (the run marker); refuse it here, before
            # a run directory is made, rather than leave a half-started run behind.
            raise app_error(
                Kind.INVALID_SECRET,
                f"secret name {name!r} is reserved: rtrain uses RTRAIN_* names itself.",
            )
    env = {**settings.env, **p.env}
    for name, value in env.items():
        given = name in p.env
        validation.env_var(name, value, "--env" if given else f"config.toml [hosts.{p.host}] env")
        if name in p.secrets:
            raise app_error(
                Kind.INVALID_COMMAND,
                f"{name} is given both as --env and as --secret; keep one of them.",
            )
    setup = p.setup if p.setup is not None else settings.setup
    code = p.code if p.code is not None else settings.code
    config = _local_file(p.config, "config") if p.config is not None else None
    datasets = [_local_input(d) for d in ([p.dataset] if p.dataset else []) + p.datasets]
    code_dir = _local_dir(code) if code else None
    # An explicit empty command is a mistake to report, not a request for the demo trainer.
    template = p.command if p.command is not None else settings.command
    check_template(template, bool(datasets), config is not None)
    template = _with_launcher(template, p.launcher, p.gpus)
    if setup is not None:
        if not setup.strip():
            raise app_error(Kind.INVALID_COMMAND, "the setup command is empty.")
        check_words([setup], bool(datasets), config is not None)
    extra = {DEMO_TRAINER: demo_trainer_bundle()} if template is None else {}
    reserved = RESERVED - {DEMO_TRAINER} if template is not None else RESERVED
    # Walking a big code directory takes a while; the daemon answers others meanwhile.
    inputs = await asyncio.to_thread(
        gather,
        config=config,
        config_name=CONFIG_NAME,
        datasets=datasets,
        code=code_dir,
        extra=extra,
        reserved=reserved,
        include=p.include,
        follow_links=p.follow_links,
    )
    limits = chosen_limits(p, settings)
    launcher = ops.launcher(p.host)
    if not launcher.runs_on_host:
        p = _slurm_limits(p, limits)
        # A batch job's processes are the scheduler's: no watcher of rtrain's sees them.
        limits = Limits(max_duration=limits.max_duration)
    check_scheduler_options(ops, p)
    after = after_run_plan(p, settings.terminate)
    if ops.known(p.host, run_id) is not None:
        raise app_error(
            Kind.RUN_EXISTS,
            f"run {run_id} already exists on {p.host}; pick another --run-id.",
            runId=run_id,
        )

    try:
        transport = await ops.transport(p.host)
    except RpcError as error:
        raise _nothing_started(error, p.host) from None
    # The host's guard counts it busy from the claim to the launch: in between, the far side
    # sees a run directory that was never launched.
    async with ops.leases.hold(p.host, transport, workdir):
        started = await _claim_ship_launch(
            ops,
            transport,
            p,
            ctx,
            run_id,
            workdir,
            python,
            env,
            setup,
            datasets,
            template,
            inputs,
            limits,
            after,
        )
    return msgspec.structs.replace(started, code=code_report(inputs))


async def _claim_ship_launch(
    ops: Ops,
    transport: Transport,
    p: StartParams,
    ctx: Notifier,
    run_id: str,
    workdir: str,
    python: str,
    env: dict[str, str],
    setup: str | None,
    datasets: list[Path],
    template: list[str] | None,
    inputs: Inputs,
    limits: Limits,
    after: AfterRun | None,
) -> StartResult:
    launcher = ops.launcher(p.host)
    try:
        # A scheduler hands out a cluster's GPUs itself; rtrain shares only a host's own.
        if launcher.runs_on_host:
            plan = await plan_gpus(transport, p, workdir, run_id)
        else:
            plan = GpuPlan(gate=False)
        prepared = await contract.prepare(transport, workdir, run_id)
    except RpcError as error:
        raise _nothing_started(error, p.host) from None
    if prepared.exists:
        raise app_error(
            Kind.RUN_EXISTS,
            f"run {run_id} already exists on {p.host}; pick another --run-id.",
            runId=run_id,
        )
    run_dir = prepared.run_dir
    if run_dir is None:
        raise app_error(
            Kind.REMOTE_FAILED,
            f"{p.host}: could not create the run directory: {prepared.error_text}; "
            "nothing was started.",
        )

    first_dataset = datasets[0].name if datasets else None
    command = expand(
        template or _demo_command(first_dataset, p.launcher),
        python=python,
        dataset=first_dataset,
        run_dir=run_dir,
        gpus=p.gpus,
        relay=launcher.runs_on_host,
    )
    setup_command = (
        None
        if setup is None
        else expand([setup], python=python, dataset=first_dataset, run_dir=run_dir, gpus=p.gpus)[0]
    )
    # From here the run id is taken on the host, so the registry knows the run at once
    # (silently: subscribers hear of it once it runs). A daemon killed mid-start then finds
    # it again and the monitor settles it: running if launched, lost (never launched) if not.
    pending = RunInfo(
        host=p.host,
        run_id=run_id,
        state="unknown",
        remote_dir=run_dir,
        log_path=f"{run_dir}/train.log",
        workdir=workdir,
        command=command,
        created_at=now(),
        reason=BEING_STARTED,
        env=env,
        setup=setup_command,
        after=after,
        # Recorded, so the run keeps its launcher whatever config.toml says later.
        launcher=ops.launcher(p.host, command).name,
    )
    pending = limits.on_run(pending)
    ops.registry.upsert(pending)
    if after is not None:
        ops.registry.set_after_run(p.host, run_id, after)
    ops.starting.add((p.host, run_id))
    # rtrain's own files (the demo trainer, the GPU gate, the watcher of the limits): shipped
    # beside the inputs, but, like every far-side script, not counted as what the user shipped.
    own = Inputs(files=list(inputs.own))
    if plan.gate:
        gate = gate_file()
        own.files.append(LocalFile(GATE_FILE, gate, len(gate)))
    if launcher.runs_on_host and limits.watched:
        own.files += [LocalFile(name, text, len(text)) for name, text in watcher_files()]
    if uses_relay(command):
        relay = relay_source()
        own.files.append(LocalFile(RANKS_FILE, relay, len(relay)))
    wrapper = gate_prefix(p, run_dir, run_id, plan)
    argv = [run_dir, run_id, python, *wrapper, *command]
    try:
        return await _ship_and_launch(
            ops, transport, p, ctx, pending, (inputs, own), argv, len(wrapper), plan, limits
        )
    finally:
        ops.starting.discard((p.host, run_id))


async def _ship_and_launch(
    ops: Ops,
    transport: Transport,
    p: StartParams,
    ctx: Notifier,
    pending: RunInfo,
    inputs: tuple[Inputs, Inputs],
    argv: list[str],
    wrapper_words: int,
    plan: GpuPlan,
    limits: Limits,
) -> StartResult:
    """`argv`: launch.sh's arguments, whose command starts with `wrapper_words` words of
    rtrain's own (the GPU gate) before the trainer's. `inputs`: the user's, and rtrain's own
    scripts (shipped side by side; only the first are reported)."""
    run_dir, run_id = pending.remote_dir or "", pending.run_id
    channels = ops.hosts.config.host(p.host).channels
    users, own = inputs
    try:
        shipped, own_shipped = await _ship_side_by_side(
            _ship(transport, run_dir, run_id, users, p, ctx, channels),
            _ship_own(transport, run_dir, run_id, own, channels),
        )
    except RpcError as error:
        ops.registry.delete(p.host, run_id)
        await _discard(transport, p, pending)
        raise _nothing_started(error, p.host) from None
    except BaseException:
        ops.registry.delete(p.host, run_id)
        await _discard(transport, p, pending)
        raise
    meta: dict[str, object] = {"inputs": {f.path: f.sha256 for f in shipped}}
    # What a restart with a new command fills its placeholders with, as this start did.
    meta["gpus"] = p.gpus
    first_dataset = p.dataset or next(iter(p.datasets), None)
    if first_dataset is not None:
        meta["dataset"] = Path(first_dataset).name
    if own_shipped:
        # Runs hold copies of their inputs, not links: the cache's gc reads what they use here.
        meta["rtrain_inputs"] = {f.path: f.sha256 for f in own_shipped}
    if pending.env:
        meta["env"] = pending.env
    if pending.setup is not None:
        meta["setup"] = pending.setup
    if wrapper_words:
        meta["wrapper_words"] = wrapper_words
    if p.secrets:
        # Their names only: a restart asks for the values again.
        meta["secret_names"] = sorted(p.secrets)
    if limits.watched:
        meta["limits"] = msgspec.to_builtins(limits)
    meta["launcher"] = pending.launcher
    launcher = ops.run_launcher(p.host, pending.launcher)
    secret_lines = contract.launch_stdin(
        p.secrets,
        pending.env,
        pending.setup,
        meta,
        wrapper=wrapper_words,
        limits=launch_line(limits, launcher.default_grace) if launcher.runs_on_host else None,
    )

    async def launch() -> StartResult:
        try:
            launched = await _launch(ops, transport, p, argv, secret_lines)
        except RpcError as error:
            if not answer_may_be_lost(error):
                ops.registry.delete(p.host, run_id)
                raise
            log.info("start %s/%s: %s; asking again", p.host, run_id, error.message)
            return await _launch_again(ops, p, pending, argv, secret_lines, shipped, plan)
        return _launched(ops, p, pending, launched, shipped, plan)

    # Once the launch has begun it is finished and recorded even if the client cancels:
    # the answer then says the run started, so a start never leaves an untold trainer.
    launching = asyncio.ensure_future(launch())
    try:
        return await asyncio.shield(launching)
    except asyncio.CancelledError:
        return await launching


async def _discard(transport: Transport, p: StartParams, pending: RunInfo) -> None:
    """Remove the run directory of a start that launched nothing (cancelled, or failed while
    shipping), so the run id is free again. Best effort: a host that is gone keeps it."""
    run_id, workdir = pending.run_id, pending.workdir or DEFAULT_WORKDIR
    try:
        # Shielded: a start cancelled by its client still cleans up after itself.
        done = await asyncio.shield(contract.discard(transport, workdir, run_id))
    except (RpcError, asyncio.CancelledError) as error:
        log.warning("start %s/%s: its run directory stays: %s", p.host, run_id, error)
        return
    if not done.ok:
        log.warning("start %s/%s: its run directory stays: %s", p.host, run_id, done.error_text)


async def _launch(
    ops: Ops, transport: Transport, p: StartParams, argv: list[str], secret_lines: bytes
) -> Launched:
    run_dir, run_id, python, *command = argv
    return await ops.launcher(p.host, command).launch(
        transport, run_dir, run_id, python, command, secret_lines, p
    )


def _launched(
    ops: Ops,
    p: StartParams,
    pending: RunInfo,
    launched: Launched,
    shipped: list[ShippedFile],
    plan: GpuPlan,
) -> StartResult:
    if launched.pid is None and launched.job_id is None:
        ops.registry.delete(p.host, pending.run_id)
        # The script says why on stdout (`error KIND ...`) and sometimes on stderr.
        why = str(launched.error or "") or launched.error_text
        if launched.error is not None and launched.error.word == ErrorWord.SBATCH_REFUSED:
            why = f"the cluster refused the job: {' '.join(launched.error.args)}"
        raise app_error(Kind.REMOTE_FAILED, f"{p.host}: the trainer did not start: {why}")
    started_at = launched.started_at or now()
    if launched.job_id is not None:
        # A batch job: the scheduler decides when it runs; the monitor says when.
        run = ops.record(
            msgspec.structs.replace(
                pending,
                state="queued",
                started_at=started_at,
                last_seen=now(),
                reason=f"submitted as Slurm job {launched.job_id}",
                job_id=launched.job_id,
                attempts=[Attempt(number=1, state="queued", started_at=started_at)],
            )
        )
        return StartResult(run=run, pid=None, uploaded_bytes=_bytes(shipped), shipped=shipped)
    # A run that waits for GPUs is queued on the host from its first moment.
    state: RunState = "queued" if plan.queued_reason else "running"
    run = ops.record(
        msgspec.structs.replace(
            pending,
            state=state,
            started_at=started_at,
            last_seen=now(),
            reason=plan.queued_reason,
            attempts=[
                Attempt(
                    number=1,
                    state=state,
                    started_at=started_at,
                    running_at=started_at if state == "running" else None,
                )
            ],
        )
    )
    return StartResult(run=run, pid=launched.pid, uploaded_bytes=_bytes(shipped), shipped=shipped)


async def _launch_again(
    ops: Ops,
    p: StartParams,
    pending: RunInfo,
    argv: list[str],
    secret_lines: bytes,
    shipped: list[ShippedFile],
    plan: GpuPlan,
) -> StartResult:
    """The launch's answer was lost with the connection: the trainer may or may not run.
    A second launch settles it, through a fresh connection: the far side's atomic claim
    (meta.json, O_EXCL) makes it either start the trainer or find the first launch's."""
    try:
        transport = await ops.transport(p.host)
        launched = await _launch(ops, transport, p, argv, secret_lines)
        if not launched.already_launched:
            return _launched(ops, p, pending, launched, shipped, plan)
        # The first launch got there. Its trainer may still be on its way up: ask until the
        # host says more than "launched, nothing alive yet" (launch.sh allows 10 s).
        deadline = time.monotonic() + LAUNCH_SETTLES
        while True:
            [fresh] = await refresh(ops, p.host, [pending])
            settled = fresh is not None and fresh.state != "lost"
            if settled or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
    except RpcError as error:
        if not answer_may_be_lost(error):
            raise
        why = (
            f"the connection to {p.host} dropped while launching {pending.run_id}, and the "
            "host has not answered since; whether it started is not known yet"
        )
        ops.record(msgspec.structs.replace(pending, reason=why))
        raise app_error(
            error.kind or Kind.HOST_UNREACHABLE,
            f"{why}: `rtrain status {p.host} {pending.run_id}` tells once it answers "
            f"({error.message}).",
            runId=pending.run_id,
        ) from None
    if fresh is None:
        ops.registry.delete(p.host, pending.run_id)
        raise app_error(
            Kind.REMOTE_FAILED, f"{p.host}: the trainer did not start: the run directory is gone"
        )
    run = ops.record(fresh)
    if run.state == "lost":
        raise app_error(
            Kind.REMOTE_FAILED, f"{p.host}: the trainer did not start: {run.reason or 'lost'}"
        )
    return StartResult(run=run, pid=None, uploaded_bytes=_bytes(shipped), shipped=shipped)


def _slurm_limits(p: StartParams, limits: Limits) -> StartParams:
    """A batch job's maximum duration is its time limit: Slurm ends it there."""
    if not limits.max_duration:
        return p
    if p.time is not None and p.max_duration is not None:
        raise app_error(
            Kind.INVALID_COMMAND,
            f"on {p.host}, a Slurm host, --max-duration becomes the job's --time: "
            "give one of them, not both.",
        )
    if p.time is not None:
        return p  # the run's own --time wins over the host's max_duration
    return msgspec.structs.replace(p, time=slurm_time(limits.max_duration))


def _bytes(shipped: list[ShippedFile]) -> int:
    return sum(f.sent_bytes for f in shipped)


def _nothing_started(error: RpcError, host: str) -> RpcError:
    """`error`, saying that the start launched nothing (a user must not wonder)."""
    if error.kind == Kind.RUN_EXISTS:
        return error
    return RpcError(
        error.code, f"{error.message.rstrip('.')}; nothing was started on {host}.", error.data
    )


def _local_file(path: str, what: str) -> Path:
    local = Path(path).expanduser()
    if not local.is_file():
        raise app_error(
            Kind.LOCAL_FILE_MISSING, f"the {what} {path!r} does not exist or is not a file."
        )
    return local.resolve()


def _local_input(path: str) -> Path:
    local = Path(path).expanduser()
    if not local.is_file() and not local.is_dir():
        raise app_error(
            Kind.LOCAL_FILE_MISSING,
            f"the dataset {path!r} does not exist or is neither a file nor a directory.",
        )
    return local.resolve()


def _local_dir(path: str) -> Path:
    local = Path(path).expanduser()
    if not local.is_dir():
        raise app_error(
            Kind.LOCAL_FILE_MISSING, f"the code directory {path!r} does not exist or is not one."
        )
    return local.resolve()


def _with_launcher(template: list[str] | None, launcher: str | None, gpus: int) -> list[str] | None:
    """The command template for the launcher asked for; refuses what cannot go together."""
    uses_torchrun = template is not None and TORCHRUN_WORD in template
    if launcher == "process" and uses_torchrun:
        raise app_error(
            Kind.INVALID_COMMAND,
            "the command uses {torchrun}, but --launcher process was asked for.",
        )
    if launcher != "torchrun" and not uses_torchrun:
        return template
    if gpus < 1:
        raise app_error(
            Kind.INVALID_COMMAND,
            "torchrun starts one rank per GPU: give --gpus N (1 or more), not --gpus 0.",
        )
    if template is None or uses_torchrun:
        return template
    if template[0] != "{python}":
        raise app_error(
            Kind.INVALID_COMMAND,
            "--launcher torchrun needs a command that starts with {python} (it becomes "
            "torchrun), or one that uses {torchrun} where torchrun goes.",
        )
    return [TORCHRUN_WORD, *template[1:]]


def _demo_command(dataset: str | None, launcher: str | None) -> list[str]:
    first = TORCHRUN_WORD if launcher == "torchrun" else "{python}"
    command = [first, DEMO_TRAINER, "--config", "{config}"]
    return command + (["--dataset", "{dataset}"] if dataset is not None else [])


async def _ship_side_by_side(
    users: Coroutine[Any, Any, list[ShippedFile]], own: Coroutine[Any, Any, list[ShippedFile]]
) -> tuple[list[ShippedFile], list[ShippedFile]]:
    """What `users` and `own` shipped, once both have; the first failure of either stops
    the other, so a start that failed leaves nothing moving into its run directory."""
    tasks = [asyncio.ensure_future(users), asyncio.ensure_future(own)]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            task.result()  # raises the first failure
        return tasks[0].result(), tasks[1].result()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _ship_own(
    transport: Transport, run_dir: str, run_id: str, own: Inputs, channels: int | None
) -> list[ShippedFile]:
    if not own.files:
        return []
    progress = ShipProgress(own, lambda _done: None)
    return await ship_files(transport, run_dir, run_id, own, progress, channels=channels)


async def _ship(
    transport: Transport,
    run_dir: str,
    run_id: str,
    inputs: Inputs,
    p: StartParams,
    ctx: Notifier,
    channels: int | None,
) -> list[ShippedFile]:
    token = p.progress_token
    title = f"Shipping to {p.host}"
    last = 0.0

    def report(
        kind: Literal["begin", "report", "end"], done: ShipProgress, message: str | None = None
    ) -> None:
        if token is not None:
            files = (done.done_files, done.total_files)
            progress = byte_progress(
                token, kind, title, done.done_bytes, done.total_bytes, message, files=files
            )
            ctx.notify("$/progress", progress)

    def changed(done: ShipProgress) -> None:
        nonlocal last
        if time.monotonic() - last > 0.1 or done.done_files == done.total_files:
            last = time.monotonic()
            report("report", done)

    progress = ShipProgress(inputs, changed)
    report("begin", progress)
    shipped = await ship_files(transport, run_dir, run_id, inputs, progress, channels=channels)
    report("end", progress, f"{len(shipped)} files, {progress.total_bytes} bytes verified")
    return shipped
