"""host/preflight: can this host train? A verdict with one sentence per problem.

One far-side probe (preflight.sh) gathers everything; the judging lives beside this file, one
topic each: the python and torch, the GPUs, packages, the disk, Hugging Face access.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from rtrain.daemon.environments.lock_file import read_lock
from rtrain.daemon.launchers.launcher import SchedulerVerdict
from rtrain.daemon.preflight.container import judge_container
from rtrain.daemon.preflight.disk import inputs_text, judge_disk, would_ship
from rtrain.daemon.preflight.environment import judge_environment
from rtrain.daemon.preflight.gpus import count_reason, driver_info, gpu_findings, gpu_list
from rtrain.daemon.preflight.hub import judge_hub
from rtrain.daemon.preflight.packages import (
    PackageVerdict,
    judge_packages,
    probe_names,
    tracker_findings,
)
from rtrain.daemon.preflight.python import PythonVerdict, judge_python, torch_info
from rtrain.daemon.remote.contract import answers, launch_scripts, preflight_scripts
from rtrain.daemon.ssh.failures import host_did_not_answer
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol import validation
from rtrain.protocol.byte_sizes import human_bytes
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import (
    DEFAULT_PYTHON,
    DEFAULT_WORKDIR,
    DiskCheck,
    DriverInfo,
    Finding,
    GpuInfo,
    HubAccess,
    PreflightParams,
    PreflightResult,
)

from .cluster_preflight import LOGIN_NODE, login_node
from .context import DaemonState, chosen
from .notifier import Notifier
from .run_inputs import Inputs

HF_TOKEN = "HF_TOKEN"


def _validate(p: PreflightParams) -> None:
    validation.host(p.host)
    if p.workdir is not None:
        validation.workdir(p.workdir)
    if p.python is not None:
        validation.python(p.python)
    if p.gpus < 0:
        raise app_error(Kind.INVALID_COMMAND, f"gpus must be 0 or more, not {p.gpus}.")
    for text in p.requires:
        validation.requirement(text)
    for model in p.hf_models:
        validation.hf_model(model)
    for name, value in p.secrets.items():
        validation.secret_name(name)
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise app_error(
                Kind.INVALID_SECRET, f"secret {name} holds a control character; a token cannot."
            )


async def preflight(
    ops: DaemonState, p: PreflightParams, ctx: Notifier | None = None
) -> PreflightResult:
    _validate(p)
    settings = ops.hosts.config.host(p.host)
    interpreter = validation.python(chosen(p.python, settings.python, DEFAULT_PYTHON))
    workdir = validation.workdir(chosen(p.workdir, settings.workdir, DEFAULT_WORKDIR))
    # Local paths are read before anything reaches the host.
    # What start would ship, to the byte: the same walk, rules and links.
    gathered = await asyncio.to_thread(
        would_ship,
        p.inputs,
        config=p.config,
        code=p.code,
        include=p.include,
        follow_links=p.follow_links,
    )
    lock = read_lock(Path(p.requirements), "--requirements") if p.requirements else None
    image = _image(p, settings.image)
    try:
        transport, report = await _probe(ops, p, interpreter, workdir)
    except RpcError as error:
        return _unanswered(p, error)
    verdict = _Verdict(findings=[Finding("transport", f"{p.host} over {transport.kind}")])
    # On a cluster's login node the GPUs are Slurm's to count, not nvidia-smi's, and the
    # python there need not see any: the partition leads, the login node's own are labelled.
    cluster = await ops.launcher(p.host).preflight(p, workdir)
    if cluster is not None:
        ops.hosts.partitions[p.host] = cluster.partitions
        verdict.cluster = cluster
        verdict.findings += cluster.findings
        for reason in cluster.reasons:
            verdict.problem(cluster.topic, reason)
    judged = _judge_machine(verdict, interpreter, 0 if cluster is not None else p.gpus, report)
    judged.packages = judge_packages(interpreter, p.requires, report)
    for reason in judged.packages.reasons:
        verdict.problem("packages", reason)
    verdict.findings += judged.packages.findings
    verdict.findings += tracker_findings(interpreter, report)
    judged.disk = _judge_workdir(verdict, report, workdir, gathered)
    judged.hub = _judge_hub_and_shell(verdict, report, p)
    if report.exit != answers.Exit.OK and not report.complete:
        verdict.problem("host", f"the preflight script failed on {p.host}: {report.error_text}")
    if cluster is not None:
        judged.gpus = []  # the login node's are not the run's: they are only in its labelled rows
    if judged.gpus:
        held = await _held_by_runs(transport, workdir) if report.workdir_ok else set()
        judged.gpus_free = verdict.count_free(judged.gpus, held)
    if lock is not None and report.workdir_ok:
        progress = None if ctx is None or p.progress_token is None else (ctx, p.progress_token)
        found, problem = await judge_environment(transport, workdir, interpreter, lock, progress)
        verdict.findings += found
        if problem is not None:
            verdict.problem("environment", problem)
    if image and ops.launcher(p.host).runs_on_host:
        await _judge_image(verdict, transport, p, settings.container_runtime, image)
    _remember_torch_python(
        ops, p.host, judged.python.suggested or (interpreter if report.torch is not None else None)
    )
    return _result(p, transport, report, verdict, judged)


def _remember_torch_python(ops: DaemonState, host: str, pick: str | None) -> None:
    """What a run failing for want of torch on `host` is then pointed to."""
    if pick:
        ops.torch_pythons[host] = pick
    else:
        ops.torch_pythons.pop(host, None)


def _image(p: PreflightParams, host_image: str | None) -> str | None:
    """The image to check (the request's, else the host's), its name judged before SSH."""
    image = p.image if p.image is not None else host_image
    return validation.image(image) if image else None


async def _judge_image(
    verdict: _Verdict, transport: Transport, p: PreflightParams, runtime: str, image: str
) -> None:
    found, problems = await judge_container(transport, p.host, runtime, image, p.gpus)
    verdict.findings += found
    for reason in problems:
        verdict.problem("container", reason)


async def _probe(
    ops: DaemonState, p: PreflightParams, interpreter: str, workdir: str
) -> tuple[Transport, preflight_scripts.PreflightReport]:
    """The far side's one probe (preflight.sh)."""
    transport = await ops.transport(p.host)
    # The token travels on stdin only: never an argument, never in a file.
    report = await preflight_scripts.preflight(
        transport,
        interpreter,
        workdir,
        dists=probe_names(p.requires),
        hf_models=p.hf_models,
        hf_token=p.secrets.get(HF_TOKEN, ""),
    )
    return transport, report


def _unanswered(p: PreflightParams, error: RpcError) -> PreflightResult:
    """The verdict on a host that did not answer the probe; any other error is raised again."""
    if error.kind == Kind.LOGIN_REQUIRED:
        raise error  # not a verdict on the host: the user has a step to take first
    if host_did_not_answer(error) or error.kind == Kind.REMOTE_FAILED:
        return PreflightResult(
            host=p.host,
            ok=False,
            reasons=[error.message],
            findings=[Finding("host", error.message, "problem")],
        )
    raise error


@dataclass
class _Verdict:
    """The reasons a host cannot train, and every finding, in the order they are shown."""

    findings: list[Finding]
    reasons: list[str] = field(default_factory=list)
    # What a cluster's scheduler offers; set when the host is a login node (a scheduler's).
    cluster: SchedulerVerdict | None = None

    def problem(self, topic: str, reason: str) -> None:
        self.reasons.append(reason)
        self.findings.append(Finding(topic, reason, "problem"))

    def here(self, rows: list[Finding]) -> list[Finding]:
        """The host's own rows; a Slurm host's are its login node's, and labelled so (a run
        does not use that python or those GPUs)."""
        return rows if self.cluster is None else login_node(rows)

    def count_free(self, gpus: list[GpuInfo], held: set[int]) -> int:
        """The GPUs free now, told right after the last GPU row."""
        free = sum(1 for gpu in gpus if not gpu.in_use_by_other and gpu.index not in held)
        last_gpu = max(i for i, f in enumerate(self.findings) if f.topic == "gpu")
        self.findings.insert(last_gpu + 1, Finding("gpu", f"{free} of {len(gpus)} free now"))
        return free


@dataclass
class _Judged:
    """What each topic's judge found, for the result's own fields."""

    python: PythonVerdict
    gpus: list[GpuInfo]
    driver: DriverInfo | None
    packages: PackageVerdict | None = None
    disk: DiskCheck | None = None
    hub: list[HubAccess] = field(default_factory=list)
    gpus_free: int | None = None


def _judge_machine(
    verdict: _Verdict, interpreter: str, local_gpus: int, report: preflight_scripts.PreflightReport
) -> _Judged:
    """The python and torch, and the GPUs, of the host preflight reaches."""
    python = judge_python(interpreter, local_gpus, report)
    verdict.findings += verdict.here(python.findings)
    for reason in python.reasons:
        verdict.problem("python" if verdict.cluster is None else f"python ({LOGIN_NODE})", reason)
    gpus = gpu_list(report)
    driver = driver_info(report)
    verdict.findings += verdict.here(gpu_findings(gpus, driver))
    short = count_reason(local_gpus, gpus, report)
    if short is not None:
        verdict.problem("gpu", short)
    return _Judged(python, gpus, driver)


def _judge_workdir(
    verdict: _Verdict,
    report: preflight_scripts.PreflightReport,
    workdir: str,
    gathered: Inputs | None,
) -> DiskCheck | None:
    """The workdir's use and room, against what start would ship."""
    if not report.workdir_ok:
        why = report.workdir_error or "not writable"
        verdict.problem("workdir", f"workdir {workdir} not usable: {why}")
    shipped = gathered.total_bytes if gathered is not None else None
    disk, disk_reason = judge_disk(shipped, report.free_bytes)
    if report.workdir and report.free_bytes is not None:
        text = f"{report.workdir}: {human_bytes(report.free_bytes)} free"
        if disk is not None:
            text += (
                f"; start would ship {human_bytes(disk.ship_bytes)} "
                f"(+ {human_bytes(disk.margin_bytes)} margin)"
            )
        verdict.findings.append(Finding("workdir", text))
    if disk_reason:
        verdict.problem("disk", disk_reason)
    if gathered is not None:
        verdict.findings.append(Finding("inputs", inputs_text(gathered)))
    return disk


def _judge_hub_and_shell(
    verdict: _Verdict, report: preflight_scripts.PreflightReport, p: PreflightParams
) -> list[HubAccess]:
    """Hugging Face access to the asked models, and a login shell that prints."""
    hub = judge_hub(report, p.hf_models)
    for access in hub:
        if access.ok:
            verdict.findings.append(Finding("hugging face", access.message))
        else:
            verdict.problem("hugging face", access.message)
    if report.shell_noise:
        first = report.shell_noise.splitlines()[0]
        verdict.findings.append(
            Finding(
                "shell",
                f"the login shell on {p.host} prints before every command ({first!r}, "
                "from ~/.bashrc or a login file); rtrain reads past it",
                "info",
            )
        )
    return hub


def _result(
    p: PreflightParams,
    transport: Transport,
    report: preflight_scripts.PreflightReport,
    verdict: _Verdict,
    judged: _Judged,
) -> PreflightResult:
    torch = report.torch
    result = PreflightResult(
        host=p.host,
        ok=not verdict.reasons,
        reasons=verdict.reasons,
        transport=transport.kind,
        python_version=report.python_version,
        gpus=judged.gpus,
        workdir=report.workdir,
        free_disk_bytes=report.free_bytes,
        torch_version=torch.version if torch else None,
        cuda_version=torch.cuda if torch else None,
        findings=verdict.findings,
        python_executable=report.python_executable,
        torch=torch_info(torch),
        python_candidates=judged.python.candidates,
        suggested_python=judged.python.suggested,
        driver=judged.driver,
        gpus_free=judged.gpus_free,
        packages=judged.packages.checks if judged.packages else [],
        disk=judged.disk,
        hugging_face=judged.hub,
        shell_noise=report.shell_noise,
    )
    # A scheduler's own section of the result (`slurm`), as its launcher fills it.
    return (
        msgspec.structs.replace(result, **verdict.cluster.result_fields)
        if verdict.cluster
        else result
    )


async def _held_by_runs(transport: Transport, workdir: str) -> set[int]:
    """The GPUs rtrain runs of `workdir` hold (their claims on the host), as a start sees them."""
    try:
        claims = await launch_scripts.gpu_claims(transport, workdir, share=False)
    except RpcError as error:
        if host_did_not_answer(error):
            return set()
        raise
    return {slot.index for slot in claims.gpus if slot.state == "held"}
