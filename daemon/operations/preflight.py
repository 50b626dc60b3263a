"""host/preflight: can this host train? A verdict with one sentence per problem."""

from __future__ import annotations

from rtrain.daemon.remote import contract
from rtrain.daemon.remote.contract import Exit
from rtrain.daemon.ssh.failures import host_did_not_answer
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import GpuInfo, PreflightParams, PreflightResult

from .context import Ops


async def preflight(ops: Ops, p: PreflightParams) -> PreflightResult:
    validation.host(p.host)
    validation.workdir(p.workdir)
    validation.python(p.python)
    if p.gpus < 0:
        raise app_error(Kind.INVALID_COMMAND, f"gpus must be 0 or more, not {p.gpus}.")
    try:
        transport = await ops.transport(p.host)
        report = await contract.preflight(transport, p.python, p.workdir)
    except RpcError as error:
        if host_did_not_answer(error) or error.kind == Kind.REMOTE_FAILED:
            return PreflightResult(host=p.host, ok=False, reasons=[error.message])
        raise
    reasons = []
    python_version = None
    if report.python_ok:
        python_version = report.python_version or ""
    else:
        reasons.append(f"{p.python} not usable: {report.python_error or 'did not run'}")
    gpus = [
        GpuInfo(
            index=gpu.index if gpu.index is not None else i,
            name=gpu.name,
            memory_mib=gpu.memory_mib,
        )
        for i, gpu in enumerate(report.gpus)
    ]
    if len(gpus) < p.gpus:
        smi = report.nvidia_smi
        if smi and smi[0] == "missing":
            why = "nvidia-smi not found: no NVIDIA driver on the host's PATH"
        elif smi and smi[0] == "error":
            why = f"nvidia-smi failed: {' '.join(smi[1:])}"
        else:
            why = "no CUDA GPU visible to nvidia-smi"
        reasons.append(f"needs {p.gpus} GPU(s), found {len(gpus)} ({why})")
    if not report.workdir_ok:
        reasons.append(f"workdir {p.workdir} not usable: {report.workdir_error or 'not writable'}")
    if report.exit != Exit.OK and not report.said_anything:
        reasons.append(f"the preflight script failed on {p.host}: {report.error_text}")
    return PreflightResult(
        host=p.host,
        ok=not reasons,
        reasons=reasons,
        transport=transport.kind,
        python_version=python_version,
        gpus=gpus,
        workdir=report.workdir,
        free_disk_bytes=report.free_bytes,
        torch_version=report.torch,
        cuda_version=report.cuda if report.cuda != "none" else None,
    )
