"""host/preflight: can this host train? A verdict with one sentence per problem."""

from __future__ import annotations

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
        done = await transport.run("preflight", [p.python, p.workdir], timeout=90)
    except RpcError as error:
        if error.kind in (
            Kind.HOST_UNREACHABLE,
            Kind.AUTH_FAILED,
            Kind.HOST_KEY_CHANGED,
            Kind.TIMEOUT,
            Kind.REMOTE_FAILED,
        ):
            return PreflightResult(host=p.host, ok=False, reasons=[error.message])
        raise
    fields = done.fields()
    reasons = []
    python_version = None
    if fields.get("python_ok") == ["1"]:
        python_version = (fields.get("python_version") or [""])[0]
    else:
        why = (fields.get("python_error") or ["did not run"])[0]
        reasons.append(f"{p.python} not usable: {why}")
    gpus = [
        GpuInfo(
            index=int(row[0]) if row[0].isdigit() else i,
            name=row[1],
            memory_mib=int(row[2]) if len(row) > 2 and row[2].isdigit() else None,
        )
        for i, row in enumerate(done.rows("gpu"))
        if len(row) >= 2
    ]
    if len(gpus) < p.gpus:
        smi = fields.get("nvidia_smi")
        if smi and smi[0] == "missing":
            why = "nvidia-smi not found: no NVIDIA driver on the host's PATH"
        elif smi and smi[0] == "error":
            why = f"nvidia-smi failed: {' '.join(smi[1:])}"
        else:
            why = "no CUDA GPU visible to nvidia-smi"
        reasons.append(f"needs {p.gpus} GPU(s), found {len(gpus)} ({why})")
    if fields.get("workdir_ok") != ["1"]:
        why = (fields.get("workdir_error") or ["not writable"])[0]
        reasons.append(f"workdir {p.workdir} not usable: {why}")
    if done.returncode != 0 and not fields:
        reasons.append(f"the preflight script failed on {p.host}: {done.error_text}")
    free = fields.get("free_bytes")
    torch = fields.get("torch")
    cuda = fields.get("cuda")
    return PreflightResult(
        host=p.host,
        ok=not reasons,
        reasons=reasons,
        transport=transport.kind,
        python_version=python_version,
        gpus=gpus,
        workdir=fields["workdir"][0] if fields.get("workdir") else None,
        free_disk_bytes=int(free[0]) if free and free[0].isdigit() else None,
        torch_version=torch[0] if torch else None,
        cuda_version=cuda[0] if cuda and cuda[0] != "none" else None,
    )
