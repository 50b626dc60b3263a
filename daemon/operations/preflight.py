"""host/preflight: can this host train? A verdict with one sentence per problem.

One far-side probe (preflight.sh) gathers everything; the judging lives beside this file, one
topic each: the python and torch, the GPUs, packages, the disk, Hugging Face access.
"""

from __future__ import annotations

import asyncio

from rtrain.daemon.launchers.slurm import SlurmLauncher
from rtrain.daemon.remote import contract
from rtrain.daemon.ssh.failures import host_did_not_answer
from rtrain.daemon.ssh.transport import Transport
from rtrain.protocol import validation
from rtrain.protocol.byte_sizes import human_bytes
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import (
    DEFAULT_PYTHON,
    DEFAULT_WORKDIR,
    Finding,
    PreflightParams,
    PreflightResult,
)

from .cluster_preflight import LOGIN_NODE, cluster_findings, login_node
from .context import Ops, chosen
from .preflight_disk import inputs_text, judge_disk, would_ship
from .preflight_gpus import count_reason, driver_info, gpu_findings, gpu_list
from .preflight_hub import judge_hub
from .preflight_packages import judge_packages, probe_names
from .preflight_python import judge_python, torch_info

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


async def preflight(ops: Ops, p: PreflightParams) -> PreflightResult:
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
    shipped = gathered.total_bytes if gathered is not None else None
    try:
        transport = await ops.transport(p.host)
        # The token travels on stdin only: never an argument, never in a file.
        report = await contract.preflight(
            transport,
            interpreter,
            workdir,
            dists=probe_names(p.requires),
            hf_models=p.hf_models,
            hf_token=p.secrets.get(HF_TOKEN, ""),
        )
    except RpcError as error:
        if error.kind == Kind.LOGIN_REQUIRED:
            raise  # not a verdict on the host: the user has a step to take first
        if host_did_not_answer(error) or error.kind == Kind.REMOTE_FAILED:
            return PreflightResult(
                host=p.host,
                ok=False,
                reasons=[error.message],
                findings=[Finding("host", error.message, "problem")],
            )
        raise
    reasons: list[str] = []
    findings: list[Finding] = [Finding("transport", f"{p.host} over {transport.kind}")]

    def problem(topic: str, reason: str) -> None:
        reasons.append(reason)
        findings.append(Finding(topic, reason, "problem"))

    # On a cluster's login node the GPUs are Slurm's to count, not nvidia-smi's, and the
    # python there need not see any: the partition leads, the login node's own are labelled.
    launcher = ops.launcher(p.host)
    slurm = None
    if isinstance(launcher, SlurmLauncher):
        cluster = await cluster_findings(ops, launcher, transport, p, workdir)
        slurm = cluster.slurm
        findings += cluster.findings
        for reason in cluster.reasons:
            problem("slurm", reason)
    local_gpus = 0 if slurm is not None else p.gpus

    def here(rows: list[Finding]) -> list[Finding]:
        """The host's own rows; a Slurm host's are its login node's, and labelled so (a run
        does not use that python or those GPUs)."""
        return rows if slurm is None else login_node(rows)

    python = judge_python(interpreter, local_gpus, report)
    findings += here(python.findings)
    for reason in python.reasons:
        problem("python" if slurm is None else f"python ({LOGIN_NODE})", reason)

    gpus = gpu_list(report)
    driver = driver_info(report)
    findings += here(gpu_findings(gpus, driver))
    short = count_reason(local_gpus, gpus, report)
    if short is not None:
        problem("gpu", short)

    packages = judge_packages(interpreter, p.requires, report)
    for reason in packages.reasons:
        problem("packages", reason)
    findings += packages.findings

    if not report.workdir_ok:
        why = report.workdir_error or "not writable"
        problem("workdir", f"workdir {workdir} not usable: {why}")
    disk, disk_reason = judge_disk(shipped, report.free_bytes)
    if report.workdir and report.free_bytes is not None:
        text = f"{report.workdir}: {human_bytes(report.free_bytes)} free"
        if disk is not None:
            text += (
                f"; start would ship {human_bytes(disk.ship_bytes)} "
                f"(+ {human_bytes(disk.margin_bytes)} margin)"
            )
        findings.append(Finding("workdir", text))
    if disk_reason:
        problem("disk", disk_reason)
    if gathered is not None:
        findings.append(Finding("inputs", inputs_text(gathered)))

    hub = judge_hub(report, p.hf_models)
    for access in hub:
        if access.ok:
            findings.append(Finding("hugging face", access.message))
        else:
            problem("hugging face", access.message)

    if report.shell_noise:
        first = report.shell_noise.splitlines()[0]
        findings.append(
            Finding(
                "shell",
                f"the login shell on {p.host} prints before every command ({first!r}, "
                "from ~/.bashrc or a login file); rtrain reads past it",
                "info",
            )
        )
    if report.exit != contract.Exit.OK and not report.complete:
        problem("host", f"the preflight script failed on {p.host}: {report.error_text}")

    gpus_free = None
    if slurm is not None:
        gpus = []  # the login node's are not the run's: they are only in its labelled rows
    if gpus:
        held = await _held_by_runs(transport, workdir) if report.workdir_ok else set()
        gpus_free = sum(1 for gpu in gpus if not gpu.in_use_by_other and gpu.index not in held)
        last_gpu = max(i for i, f in enumerate(findings) if f.topic == "gpu")
        findings.insert(last_gpu + 1, Finding("gpu", f"{gpus_free} of {len(gpus)} free now"))
    torch = report.torch
    return PreflightResult(
        host=p.host,
        ok=not reasons,
        reasons=reasons,
        transport=transport.kind,
        python_version=report.python_version,
        gpus=gpus,
        workdir=report.workdir,
        free_disk_bytes=report.free_bytes,
        torch_version=torch.version if torch else None,
        cuda_version=torch.cuda if torch else None,
        findings=findings,
        python_executable=report.python_executable,
        torch=torch_info(torch),
        python_candidates=python.candidates,
        suggested_python=python.suggested,
        driver=driver,
        gpus_free=gpus_free,
        packages=packages.checks,
        disk=disk,
        hugging_face=hub,
        shell_noise=report.shell_noise,
        slurm=slurm,
    )


async def _held_by_runs(transport: Transport, workdir: str) -> set[int]:
    """The GPUs rtrain runs of `workdir` hold (their claims on the host), as a start sees them."""
    try:
        claims = await contract.gpu_claims(transport, workdir, share=False)
    except RpcError as error:
        if host_did_not_answer(error):
            return set()
        raise
    return {slot.index for slot in claims.gpus if slot.state == "held"}
