"""run/start: validate into one frozen plan (start_plan.py), claim every node's run directory,
ship the inputs checksummed, launch detached, record."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import posixpath
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec

from rtrain.daemon.containers import run_container
from rtrain.daemon.environments import run_environment
from rtrain.daemon.launchers.launcher import Launcher
from rtrain.daemon.launchers.torchrun.launcher import (
    FAILURE_FILE,
    RANKS_FILE,
    TORCHRUN_LOGS,
    relay_source,
    uses_relay,
)
from rtrain.daemon.remote.contract import launch_scripts
from rtrain.daemon.remote.contract.launch_scripts import LaunchAhead, Launched
from rtrain.daemon.remote.error_words import ErrorWord
from rtrain.daemon.ssh.failures import answer_may_be_lost
from rtrain.daemon.transfer.shipping import Answered, Entry, cache_entries
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.launcher_options import NodesOptions, asks_torchrun
from rtrain.protocol.messages import (
    DEFAULT_PYTHON,
    Attempt,
    RunInfo,
    RunNode,
    RunState,
    ShippedFile,
    StartParams,
    StartResult,
    byte_progress,
)

from .command_template import CONFIG_NAME, TORCHRUN_WORD, expand
from .context import DaemonState, chosen, now
from .gpu_sharing import (
    GATE_FILE,
    GpuPlan,
    gate_file,
    gate_prefix,
    plan_gpus,
)
from .notifier import Notifier
from .run_inputs import Inputs, LocalFile
from .run_limits import (
    LIMITS_FILE,
    STOP_FILE,
    WATCHER_FILES,
    launch_line,
    watcher_files,
)
from .shipping import Destination, ShipProgress, code_report, ship_files, shipped_inputs
from .start_plan import DEMO_TRAINER, StartPlan, plan_start
from .status import refresh

log = logging.getLogger(__name__)
# Names the run dir already uses; a dataset may not take them.
RESERVED = {
    CONFIG_NAME,
    DEMO_TRAINER,
    "train.log",
    ".rtrain",
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
    *run_environment.RESERVED,
    *run_container.RESERVED,
}
# The registry's word for a run whose inputs are still being shipped.
BEING_STARTED = "being started"
# How long a launch that got there first may take to show its trainer (launch.sh waits 10 s).
LAUNCH_SETTLES = 12.0


def new_run_id() -> str:
    return f"run-{int(time.time())}-{secrets.token_hex(2)}"


# What a caller of `start` sets up once the start is planned, before anything is shipped
# (the run's reverse forwards, run_companions.py): variables it adds to the run's environment.
Prepare = Callable[[StartPlan], Awaitable[dict[str, str]]]


async def start(
    ops: DaemonState, p: StartParams, ctx: Notifier, prepare: Prepare | None = None
) -> StartResult:
    # validate -> one frozen plan -> claim -> ship -> launch -> record. Everything a user can
    # get wrong is refused in the plan, before any ssh runs.
    run_id = validation.run_id(p.run_id) if p.run_id is not None else new_run_id()
    plan = await plan_start(ops, p, run_id, RESERVED)
    if prepare is not None:
        plan = dataclasses.replace(plan, env={**plan.env, **await prepare(plan)})
    try:
        transports = [await ops.transport(host) for host in plan.hosts]
    except RpcError as error:
        raise _nothing_started(error, p.host) from None
    # Each host's guard counts it busy from the claim to the launch: in between, the far
    # side sees a run directory that was never launched.
    async with contextlib.AsyncExitStack() as leases:
        for host, transport in zip(plan.hosts, transports, strict=True):
            await leases.enter_async_context(ops.leases.hold(host, transport, plan.workdir))
        started = await _claim_ship_launch(ops, plan, transports, ctx)
    return msgspec.structs.replace(started, code=code_report(plan.inputs))


@dataclass(frozen=True)
class Claim:
    """One node's run directory, made (prepare.sh), and how the run gets GPUs there.
    `answered`: the host's cache placed what it holds of the listed inputs in the same far
    call (a transport with streams)."""

    host: str
    transport: Transport
    run_dir: str
    gpus: GpuPlan
    answered: Answered | None = None


# The inputs a node's claim lists for the host's cache to place, once its GPU plan says
# whether the gate is one of them; None: the claim lists none.
Listing = Callable[[GpuPlan], list[Entry] | None]


@dataclass(frozen=True)
class Placed:
    """What a launch needs once every node holds its run directory."""

    claims: list[Claim]
    pending: RunInfo
    own: Inputs  # rtrain's own files (the gate, the watcher, the relay)
    argv: list[str]  # launch.sh's arguments, for node 0
    wrapper_words: int  # the command's leading words of rtrain's own (the GPU gate)
    launcher: Launcher
    ahead: LaunchAhead | None = None  # launch.sh opened beside the claim, waiting for its go

    @property
    def queued_reason(self) -> str | None:
        return next((c.gpus.queued_reason for c in self.claims if c.gpus.queued_reason), None)


async def _claim(
    ops: DaemonState, plan: StartPlan, transports: list[Transport], listing: Listing
) -> list[Claim]:
    """Every node's run directory (all or none: one that fails removes the others)."""
    answers = await asyncio.gather(
        *(
            _claim_node(ops, plan, host, transport, listing)
            for host, transport in zip(plan.hosts, transports, strict=True)
        ),
        return_exceptions=True,
    )
    claims = [a for a in answers if isinstance(a, Claim)]
    failure = next((a for a in answers if isinstance(a, BaseException)), None)
    if failure is None:
        return claims
    for claim in claims:
        await _discard(claim.transport, claim.host, plan.workdir, plan.run_id)
    if isinstance(failure, RpcError):
        raise failure from None
    raise failure


async def _claim_node(
    ops: DaemonState, plan: StartPlan, host: str, transport: Transport, listing: Listing
) -> Claim:
    p = msgspec.structs.replace(plan.p, host=host)
    try:
        # A scheduler hands out a cluster's GPUs itself; rtrain shares only a host's own.
        if ops.launcher(host).runs_on_host:
            gpus = await plan_gpus(transport, p, plan.workdir, plan.run_id)
        else:
            gpus = GpuPlan(gate=False)
        # The claim and the cache's placement in one far call (one round trip fewer).
        entries = listing(gpus) if transport.streams else None
        began = time.monotonic()
        prepared = await launch_scripts.prepare(transport, plan.workdir, plan.run_id, entries)
        round_trip = time.monotonic() - began
    except RpcError as error:
        raise _nothing_started(error, host) from None
    if prepared.exists:
        raise app_error(
            Kind.RUN_EXISTS,
            f"run {plan.run_id} already exists on {host}; pick another --run-id.",
            runId=plan.run_id,
        )
    if prepared.run_dir is None:
        raise app_error(
            Kind.REMOTE_FAILED,
            f"{host}: could not create the run directory: {prepared.error_text}; "
            "nothing was started.",
        )
    answered = None
    if entries is not None and prepared.placement is not None:
        answered = Answered(entries, prepared.placement, round_trip)
    return Claim(host, transport, prepared.run_dir, gpus, answered)


async def _claim_ship_launch(
    ops: DaemonState, plan: StartPlan, transports: list[Transport], ctx: Notifier
) -> StartResult:
    # The launch's channel opens now, beside the claim, so that its set-up overlaps the
    # claim and the shipping; a start that launches nothing ends it unused.
    ahead = _launch_ahead(ops, plan, transports[0])
    try:
        return await _claim_ship_launch_with(ops, plan, transports, ctx, ahead)
    finally:
        if ahead is not None:
            await asyncio.shield(ahead.stand_down())


def _launch_ahead(ops: DaemonState, plan: StartPlan, transport: Transport) -> LaunchAhead | None:
    """launch.sh, opened ahead on the run's host: for a run on one host whose launcher
    launches with it, over a transport with channels of its own."""
    if plan.across_hosts or not transport.streams:
        return None
    return LaunchAhead(transport, plan.run_id) if ops.launcher(plan.p.host).launches_ahead else None


async def _claim_ship_launch_with(
    ops: DaemonState,
    plan: StartPlan,
    transports: list[Transport],
    ctx: Notifier,
    ahead: LaunchAhead | None,
) -> StartResult:
    p, run_id = plan.p, plan.run_id
    on_host = ops.launcher(p.host).runs_on_host
    claims = await _claim(ops, plan, transports, await _listing(plan, on_host))
    run_dir = claims[0].run_dir
    command, setup_command = _commands(plan, run_dir, on_host)
    nodes = _run_nodes(ops, plan, claims)
    o = p.launcher
    master_addr = o.master_addr if isinstance(o, NodesOptions) else None
    launcher = ops.nodes_launcher(nodes, master_addr) if nodes else ops.launcher(p.host, command)
    # From here the run id is taken on the host, so the registry knows the run at once
    # (silently: subscribers hear of it once it runs). A daemon killed mid-start then finds
    # it again and the monitor settles it: running if launched, lost (never launched) if not.
    pending = RunInfo(
        host=p.host,
        run_id=run_id,
        state="unknown",
        remote_dir=run_dir,
        log_path=f"{run_dir}/train.log",
        workdir=plan.workdir,
        command=command,
        created_at=now(),
        reason=BEING_STARTED,
        env=plan.env,
        setup=setup_command,
        after=plan.after,
        # Recorded, so the run keeps its launcher whatever config.toml says later.
        launcher=launcher.name,
        nodes=nodes,
        retry=plan.retry,
    )
    pending = plan.limits.on_run(pending)
    ops.record(pending, publish=False)
    if plan.after is not None:
        ops.registry.set_after_run(p.host, run_id, plan.after)
    ops.starting.add((p.host, run_id))
    # One command for every node: its GPUs go through the gate where every node has GPUs
    # to claim (a node without nvidia-smi has none the gate could hand out).
    gated = all(c.gpus.gate for c in claims)
    own = _own_files(plan, command, gated, on_host)
    wrapper = _wrapper(plan, run_dir, gated)
    argv = [run_dir, run_id, plan.python, *wrapper, *command]
    placed = Placed(claims, pending, own, argv, len(wrapper), launcher, ahead)
    try:
        return await _ship_and_launch(ops, plan, ctx, placed)
    finally:
        ops.starting.discard((p.host, run_id))


async def _listing(plan: StartPlan, on_host: bool) -> Listing:
    """What each node's claim lists for the host's cache to place. The local hashing (all of
    it on a first start; a stat a file on the same code again) comes first."""
    users = await asyncio.to_thread(cache_entries, shipped_inputs(plan.inputs))

    def listing(gpus: GpuPlan) -> list[Entry] | None:
        if users is None or plan.across_hosts:
            # Nodes may differ in their own files (the gate): each ships them itself.
            return users
        # rtrain's own files depend on the run directory's name only through the relay's
        # path, which is there or not whatever that name is.
        provisional = _commands(plan, posixpath.join(plan.workdir, plan.run_id), on_host)[0]
        own = _own_files(plan, provisional, gpus.gate, on_host)
        listed = cache_entries(shipped_inputs(own))
        return None if listed is None else users + listed

    return listing


def _run_nodes(ops: DaemonState, plan: StartPlan, claims: list[Claim]) -> list[RunNode]:
    """The nodes a run across hosts records (none for a run on one host)."""
    if not plan.across_hosts:
        return []
    return [
        RunNode(host=c.host, remote_dir=c.run_dir, python=_node_python(ops, plan.p, c.host))
        for c in claims
    ]


def _wrapper(plan: StartPlan, run_dir: str, gated: bool) -> list[str]:
    """The words before the user's command: the GPU gate, then the environment's builder,
    then the container, each wrapping what follows it."""
    p = plan.p
    wrapper = gate_prefix(p, run_dir, plan.run_id, GpuPlan(gate=gated))
    if plan.environment is not None:
        wrapper += run_environment.builder_words(plan.python, run_dir, plan.environment)
    if plan.container is not None:
        names = [*plan.env, *p.secrets]
        c = plan.container
        wrapper += run_container.wrapper_words(c.runtime, c.image, plan.run_id, names)
    return wrapper


def _node_python(ops: DaemonState, p: StartParams, host: str) -> str:
    """The python a node of a run across hosts runs: `--python` on every node, else each
    host's own from config.toml (node 0's is the plan's)."""
    return validation.python(chosen(p.python, ops.hosts.config.host(host).python, DEFAULT_PYTHON))


def _commands(plan: StartPlan, run_dir: str, on_host: bool) -> tuple[list[str], str | None]:
    """The trainer's command and the setup command, their placeholders filled."""
    p = plan.p
    first_dataset = plan.datasets[0].name if plan.datasets else None
    python = plan.python
    if plan.environment is not None:
        python = run_environment.environment_python(run_dir)
    if plan.container is not None and p.python is None:
        python = run_container.IMAGE_PYTHON
    command = expand(
        plan.template or _demo_command(first_dataset, asks_torchrun(p.launcher), plan.across_hosts),
        python=python,
        dataset=first_dataset,
        run_dir=run_dir,
        gpus=p.gpus,
        relay=on_host,
    )
    setup_command = (
        None
        if plan.setup is None
        else expand(
            [plan.setup], python=python, dataset=first_dataset, run_dir=run_dir, gpus=p.gpus
        )[0]
    )
    return command, setup_command


def _own_files(plan: StartPlan, command: list[str], gated: bool, on_host: bool) -> Inputs:
    """rtrain's own files (the demo trainer, the GPU gate, the watcher of the limits): shipped
    beside the inputs, but, like every far-side script, not counted as what the user shipped."""
    own = Inputs(files=list(plan.inputs.own))
    if gated:
        gate = gate_file()
        own.files.append(LocalFile(GATE_FILE, gate, len(gate)))
    if on_host and plan.limits.watched:
        own.files += [LocalFile(name, text, len(text)) for name, text in watcher_files()]
    if plan.environment is not None:
        files = run_environment.environment_files(plan.environment)
        own.files += [LocalFile(name, text, len(text)) for name, text in files]
    if plan.container is not None:
        files = run_container.container_files()
        own.files += [LocalFile(name, text, len(text)) for name, text in files]
    if uses_relay(command):
        relay = relay_source()
        own.files.append(LocalFile(RANKS_FILE, relay, len(relay)))
    return own


async def _ship_and_launch(
    ops: DaemonState, plan: StartPlan, ctx: Notifier, placed: Placed
) -> StartResult:
    """Ship the user's inputs and rtrain's own files to every node (side by side; only the
    first are reported, and only node 0's progress), then launch and record."""
    p, pending, run_id = plan.p, placed.pending, plan.run_id
    shipped_per_node = await _ship_everywhere(ops, plan, ctx, placed)
    shipped, own_shipped = shipped_per_node[0]
    meta = _meta(plan, pending, shipped, own_shipped, placed.wrapper_words)
    launcher = placed.launcher
    secret_lines = launch_scripts.launch_stdin(
        p.secrets,
        pending.env,
        pending.setup,
        meta,
        wrapper=placed.wrapper_words,
        limits=(
            launch_line(plan.limits, launcher.default_grace) if launcher.runs_on_host else None
        ),
    )

    async def launch() -> StartResult:
        try:
            launched = await _launch(placed, p, secret_lines)
        except RpcError as error:
            if not answer_may_be_lost(error) or plan.across_hosts:
                ops.registry.delete(p.host, run_id)
                raise
            log.info("start %s/%s: %s; asking again", p.host, run_id, error.message)
            return await _launch_again(ops, p, placed, secret_lines, shipped)
        return _launched(ops, p, placed, launched, shipped)

    # Once the launch has begun it is finished and recorded even if the client cancels:
    # the answer then says the run started, so a start never leaves an untold trainer.
    launching = asyncio.ensure_future(launch())
    try:
        return await asyncio.shield(launching)
    except asyncio.CancelledError:
        return await launching


async def _ship_everywhere(
    ops: DaemonState, plan: StartPlan, ctx: Notifier, placed: Placed
) -> list[tuple[list[ShippedFile], list[ShippedFile]]]:
    """Every node's shipped inputs and own files; a failure removes the run everywhere."""
    p, run_id = plan.p, plan.run_id
    try:
        return await asyncio.gather(
            *(
                _ship_side_by_side(
                    _ship(
                        _destination(ops, c, run_id),
                        plan.inputs,
                        p,
                        ctx,
                        report_progress=index == 0,
                    ),
                    _ship_own(_destination(ops, c, run_id), placed.own),
                )
                for index, c in enumerate(placed.claims)
            )
        )
    except BaseException as error:
        ops.registry.delete(p.host, run_id)
        for c in placed.claims:
            await _discard(c.transport, c.host, plan.workdir, run_id)
        if isinstance(error, RpcError):
            raise _nothing_started(error, p.host) from None
        raise


def _channels(ops: DaemonState, host: str) -> int | None:
    return ops.hosts.config.host(host).channels


def _meta(
    plan: StartPlan,
    pending: RunInfo,
    shipped: list[ShippedFile],
    own_shipped: list[ShippedFile],
    wrapper_words: int,
) -> dict[str, object]:
    """The keys launch.sh adds to meta.json: what a restart reads back."""
    p = plan.p
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
    if plan.limits.watched:
        meta["limits"] = msgspec.to_builtins(plan.limits)
    meta["launcher"] = pending.launcher
    if plan.code_dir is not None:
        meta["code_dir"] = str(plan.code_dir)
    if plan.environment is not None:
        meta["environment"] = True  # a restart's new command: {python} is the environment's
    meta.update(_container_meta(plan))
    if pending.nodes:
        meta["nodes"] = [msgspec.to_builtins(node) for node in pending.nodes]
    return meta


def _container_meta(plan: StartPlan) -> dict[str, object]:
    """The image a restart runs in again (also a batch job's), and the runtime."""
    meta: dict[str, object] = {}
    if plan.p.image:
        meta["image"] = plan.p.image
    if plan.container is not None:
        meta["container_runtime"] = plan.container.runtime
    return meta


async def _discard(transport: Transport, host: str, workdir: str, run_id: str) -> None:
    """Remove the run directory of a start that launched nothing (cancelled, or failed while
    shipping), so the run id is free again. Best effort: a host that is gone keeps it."""
    try:
        # Shielded: a start cancelled by its client still cleans up after itself.
        done = await asyncio.shield(launch_scripts.discard(transport, workdir, run_id))
    except (RpcError, asyncio.CancelledError) as error:
        log.warning("start %s/%s: its run directory stays: %s", host, run_id, error)
        return
    if not done.ok:
        log.warning("start %s/%s: its run directory stays: %s", host, run_id, done.error_text)


async def _launch(placed: Placed, p: StartParams, secret_lines: bytes) -> Launched:
    run_dir, run_id, python, *command = placed.argv
    return await placed.launcher.launch(
        run_dir, run_id, python, command, secret_lines, p, ahead=placed.ahead
    )


def _launched(
    ops: DaemonState,
    p: StartParams,
    placed: Placed,
    launched: Launched,
    shipped: list[ShippedFile],
) -> StartResult:
    pending = placed.pending
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
    queued_reason = placed.queued_reason
    state: RunState = "queued" if queued_reason else "running"
    run = ops.record(
        msgspec.structs.replace(
            pending,
            state=state,
            started_at=started_at,
            last_seen=now(),
            reason=queued_reason,
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
    ops: DaemonState,
    p: StartParams,
    placed: Placed,
    secret_lines: bytes,
    shipped: list[ShippedFile],
) -> StartResult:
    """The launch's answer was lost with the connection: the trainer may or may not run.
    A second launch settles it, through a fresh connection: the far side's atomic claim
    (meta.json, O_EXCL) makes it either start the trainer or find the first launch's."""
    pending = placed.pending
    try:
        launched = await _launch(placed, p, secret_lines)
        if not launched.already_launched:
            return _launched(ops, p, placed, launched, shipped)
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


def _bytes(shipped: list[ShippedFile]) -> int:
    return sum(f.sent_bytes for f in shipped)


def _nothing_started(error: RpcError, host: str) -> RpcError:
    """`error`, saying that the start launched nothing (a user must not wonder)."""
    if error.kind == Kind.RUN_EXISTS or "nothing was started" in error.message:
        return error  # it says so already
    return RpcError(
        error.code, f"{error.message.rstrip('.')}; nothing was started on {host}.", error.data
    )


def _demo_command(dataset: str | None, torchrun: bool | None, across_hosts: bool) -> list[str]:
    first = TORCHRUN_WORD if torchrun or across_hosts else "{python}"
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


async def _ship_own(to: Destination, own: Inputs) -> list[ShippedFile]:
    if not own.files:
        return []
    return await ship_files(to, own, ShipProgress(own, lambda _done: None))


def _destination(ops: DaemonState, claim: Claim, run_id: str) -> Destination:
    """One node's claimed run directory, as its shipments reach it."""
    channels = _channels(ops, claim.host)
    return Destination(claim.transport, claim.run_dir, run_id, channels, claim.answered)


async def _ship(
    to: Destination,
    inputs: Inputs,
    p: StartParams,
    ctx: Notifier,
    report_progress: bool = True,
) -> list[ShippedFile]:
    """Ship `inputs`; with `report_progress` (one node of a run across hosts does), tell the
    client how far it got."""
    token = p.progress_token if report_progress else None
    others = len(p.launcher.hosts) - 1 if isinstance(p.launcher, NodesOptions) else 0
    title = f"Shipping to {p.host}" + (f" (and {others} more node(s))" if others > 0 else "")
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
    shipped = await ship_files(to, inputs, progress)
    report("end", progress, f"{len(shipped)} files, {progress.total_bytes} bytes verified")
    return shipped
