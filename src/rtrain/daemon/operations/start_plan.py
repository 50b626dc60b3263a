"""run/start's first step: everything a user can get wrong judged, before any SSH, into one
frozen plan that the later steps (claim, ship, launch, record) only read."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import msgspec

from rtrain.daemon.environments.lock_file import EnvironmentLock, chosen_lock, code_lock
from rtrain.daemon.launchers import registry as launchers
from rtrain.daemon.remote.trainer_bundle import demo_trainer_bundle
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.launcher_options import asks_torchrun
from rtrain.protocol.messages import (
    DEFAULT_PYTHON,
    DEFAULT_WORKDIR,
    AfterRun,
    RetryPolicy,
    StartParams,
)

from .command_template import (
    CONFIG_NAME,
    TORCHRUN_WORD,
    check_template,
    check_words,
)
from .context import DaemonState, chosen
from .node_list import node_hosts
from .run_inputs import Inputs, InputSources, gather
from .run_limits import Limits, chosen_limits
from .scheduler_options import check_scheduler_options
from .then_options import after_run_plan

DEMO_TRAINER = "demo_trainer.py"


@dataclass(frozen=True)
class ContainerPlan:
    """A run inside an image: which runtime (`auto`: what the host has) and which image."""

    runtime: str
    image: str


@dataclass(frozen=True)
class StartPlan:
    """A start as validated: what runs where, with what, under which limits."""

    p: StartParams
    run_id: str
    # Every node's host, node 0 (`p.host`) first; one for a run on one host.
    hosts: tuple[str, ...]
    workdir: str
    python: str
    env: dict[str, str]
    setup: str | None
    datasets: tuple[Path, ...]
    template: list[str] | None
    inputs: Inputs
    limits: Limits
    after: AfterRun | None
    retry: RetryPolicy | None
    # The lock of the run's environment (None: the host python as it is).
    environment: EnvironmentLock | None = None
    # The code directory on this machine (a restart compares it with what was shipped).
    code_dir: Path | None = None
    # The container the setup and the trainer run in, on a host that runs its own runs
    # (a batch job's image is `p.image`, for its launcher).
    container: ContainerPlan | None = None

    @property
    def across_hosts(self) -> bool:
        return len(self.hosts) > 1


async def plan_start(
    ops: DaemonState, p: StartParams, run_id: str, reserved: set[str]
) -> StartPlan:
    """`p` judged whole, or its first mistake raised; `reserved`: the run dir's own names."""
    validation.host(p.host)
    hosts = node_hosts(ops, p)
    settings = ops.hosts.config.host(p.host)
    workdir = validation.workdir(chosen(p.workdir, settings.workdir, DEFAULT_WORKDIR))
    python = validation.python(chosen(p.python, settings.python, DEFAULT_PYTHON))
    env = _checked_env(p, settings.env)
    setup = p.setup if p.setup is not None else settings.setup
    config, datasets, code_dir = _local_paths(p, settings.code)
    # An explicit empty command is a mistake to report, not a request for the demo trainer.
    template = p.command if p.command is not None else settings.command
    check_template(template, bool(datasets), config is not None)
    across = launchers.across_hosts().runs_torchrun
    torchrun = across if len(hosts) > 1 else asks_torchrun(p.launcher)
    template = _with_launcher(template, torchrun, p.gpus)
    if setup is not None:
        _check_setup(setup, bool(datasets), config is not None)
    extra = {DEMO_TRAINER: demo_trainer_bundle()} if template is None else {}
    reserved = reserved - {DEMO_TRAINER} if template is not None else reserved
    # Walking a big code directory takes a while; the daemon answers others meanwhile.
    sources = InputSources(
        config=config,
        config_name=CONFIG_NAME,
        datasets=datasets,
        code=code_dir,
        extra=extra,
        reserved=reserved,
        include=p.include,
        follow_links=p.follow_links,
    )
    inputs = await asyncio.to_thread(gather, sources)
    environment = _environment(ops, p, len(hosts), settings.requirements, inputs)
    p, container = _container(ops, p, len(hosts), settings.image, settings.container_runtime)
    environment = _environment_in(container, environment, p, settings.requirements)
    p, limits = _with_limits(ops, p, chosen_limits(p, settings))
    check_scheduler_options(ops, p)
    after = after_run_plan(p, settings.terminate)
    retry = _retry(ops, p)
    _refuse_known(ops, p.host, run_id)
    return StartPlan(
        p=p,
        run_id=run_id,
        hosts=hosts,
        workdir=workdir,
        python=python,
        env=env,
        setup=setup,
        datasets=tuple(datasets),
        template=template,
        inputs=inputs,
        limits=limits,
        after=after,
        retry=retry,
        environment=environment,
        code_dir=code_dir,
        container=container,
    )


def _refuse_known(ops: DaemonState, host: str, run_id: str) -> None:
    if ops.known(host, run_id) is not None:
        raise app_error(
            Kind.RUN_EXISTS,
            f"run {run_id} already exists on {host}; pick another --run-id.",
            runId=run_id,
        )


def _environment(
    ops: DaemonState, p: StartParams, nodes: int, host_lock: str | None, inputs: Inputs
) -> EnvironmentLock | None:
    """The lock of the run's environment: the start's, the host's, else the code's own
    requirements.txt where it ships, on a host that runs its own runs."""
    on_host = nodes == 1 and ops.launcher(p.host).runs_on_host
    environment = chosen_lock(p.requirements, host_lock)
    if environment is not None and not on_host:
        where = "across hosts" if nodes > 1 else f"on {p.host}, which runs batch jobs"
        raise app_error(
            Kind.INVALID_COMMAND,
            f"an environment from {environment.source} is not built {where} yet; "
            "install it with --setup there (docs/environments.md).",
        )
    if environment is None and p.requirements is None and on_host:
        environment = code_lock(inputs.files)
    return environment


def _container(
    ops: DaemonState, p: StartParams, nodes: int, host_image: str | None, runtime: str
) -> tuple[StartParams, ContainerPlan | None]:
    """The start with its image chosen (the start's, else the host's; "" for none), and the
    container a run on the host runs in. A batch job's image goes to its launcher in `p`."""
    image = p.image if p.image is not None else host_image
    if not image:
        return msgspec.structs.replace(p, image=None), None
    validation.image(image)
    p = msgspec.structs.replace(p, image=image)
    if nodes > 1:
        raise app_error(
            Kind.INVALID_COMMAND,
            "--image is not supported for a run across hosts yet (docs/containers.md).",
        )
    if not ops.launcher(p.host).runs_on_host:
        return p, None
    return p, ContainerPlan(runtime=runtime, image=image)


def _environment_in(
    container: ContainerPlan | None,
    environment: EnvironmentLock | None,
    p: StartParams,
    host_lock: str | None,
) -> EnvironmentLock | None:
    """A run in an image builds no environment on the host: the code's own requirements.txt
    is the image's business, and a lock asked for is refused with the image."""
    if container is None or environment is None:
        return environment
    if p.requirements is None and host_lock is None:
        return None
    raise app_error(
        Kind.INVALID_COMMAND,
        f"a run in the image {container.image} has no environment built on the host; "
        "install the requirements in the image or with --setup, or pass --requirements ''"
        " (docs/containers.md).",
    )


def _with_limits(ops: DaemonState, p: StartParams, limits: Limits) -> tuple[StartParams, Limits]:
    """The start's options and limits as its launcher keeps them."""
    launcher = ops.launcher(p.host)
    if launcher.runs_on_host:
        return p, limits
    p = launcher.with_limits(p, limits.max_duration, _retry(ops, p) is not None)
    # A batch job's processes are the scheduler's: no watcher of rtrain's sees them.
    return p, Limits(max_duration=limits.max_duration)


def _local_paths(
    p: StartParams, host_code: str | None
) -> tuple[Path | None, list[Path], Path | None]:
    """The config, the datasets and the code directory, each checked on this machine."""
    config = _local_file(p.config, "config") if p.config is not None else None
    datasets = [_local_input(d) for d in ([p.dataset] if p.dataset else []) + p.datasets]
    code = p.code if p.code is not None else host_code
    return config, datasets, code_directory(code) if code else None


def _checked_env(p: StartParams, host_env: dict[str, str]) -> dict[str, str]:
    """The run's environment (the host's, then `--env`), its secrets' names checked with it."""
    for name in p.secrets:
        validation.secret_name(name)
        if name.startswith("RTRAIN_"):
            # The far side keeps RTRAIN_* for itself (the run marker); refuse it here, before
            # a run directory is made, rather than leave a half-started run behind.
            raise app_error(
                Kind.INVALID_SECRET,
                f"secret name {name!r} is reserved: rtrain uses RTRAIN_* names itself.",
            )
    env = {**host_env, **p.env}
    for name, value in env.items():
        given = name in p.env
        validation.env_var(name, value, "--env" if given else f"config.toml [hosts.{p.host}] env")
        if name in p.secrets:
            raise app_error(
                Kind.INVALID_COMMAND,
                f"{name} is given both as --env and as --secret; keep one of them.",
            )
    return env


def _check_setup(setup: str, has_dataset: bool, has_config: bool) -> None:
    if not setup.strip():
        raise app_error(Kind.INVALID_COMMAND, "the setup command is empty.")
    check_words([setup], has_dataset, has_config)


def _retry(ops: DaemonState, p: StartParams) -> RetryPolicy | None:
    """The run's retries: its own `--retry`, else the host's config.toml `retry`."""
    limit = p.retry if p.retry is not None else ops.hosts.config.host(p.host).retry
    if p.retry_on is not None and not limit:
        raise app_error(Kind.INVALID_COMMAND, "--retry-on says what --retry N retries; give both.")
    if not limit:
        return None
    if p.secrets:
        raise app_error(
            Kind.INVALID_COMMAND,
            "a run with --secret cannot be retried by the daemon: secrets are never stored, "
            "so no attempt could get them again; drop --retry, or restart it yourself.",
        )
    return RetryPolicy(limit=limit, on=p.retry_on or "lost")


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


def code_directory(path: str) -> Path:
    """A code directory named on this machine, resolved, or the sentence why not."""
    local = Path(path).expanduser()
    if not local.is_dir():
        raise app_error(
            Kind.LOCAL_FILE_MISSING, f"the code directory {path!r} does not exist or is not one."
        )
    return local.resolve()


def _with_launcher(
    template: list[str] | None, torchrun: bool | None, gpus: int
) -> list[str] | None:
    """The command template for the launcher asked for (`torchrun`: whether it runs torchrun
    always, never, or as the command says); refuses what cannot go together."""
    uses_torchrun = template is not None and TORCHRUN_WORD in template
    if torchrun is False and uses_torchrun:
        raise app_error(
            Kind.INVALID_COMMAND,
            "the command uses {torchrun}, but --launcher process was asked for.",
        )
    if not torchrun and not uses_torchrun:
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
