"""GPUs shared by the runs on one host: what a start asks for, checked before anything is
shipped, then claimed on the host itself by the run's first step.

The claim is the far side's (gpus.sh, shipped into the run dir as `gpu_gate.sh`): it takes
free GPUs atomically under a lock in the workdir, sets CUDA_VISIBLE_DEVICES and execs the
trainer, or, with `wait`, waits on the host (state `queued`) until enough are free. The
look here only refuses early, with the runs that hold the GPUs named; a start that loses a
race for the last GPU after the look fails on the host with the same words in its log.
"""

from __future__ import annotations

from rtrain.daemon.remote import script
from rtrain.daemon.remote.contract import launch_scripts
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import StartParams

GATE_FILE = "gpu_gate.sh"


class GpuPlan:
    """How the run gets its GPUs: through the gate (`gate`), queued from the start
    (`queued_reason`), or with none (`gpus` 0: CUDA_VISIBLE_DEVICES empty)."""

    def __init__(self, gate: bool, queued_reason: str | None = None) -> None:
        self.gate = gate
        self.queued_reason = queued_reason


async def plan_gpus(transport: Transport, p: StartParams, workdir: str, run_id: str) -> GpuPlan:
    if p.gpus == 0:
        return GpuPlan(gate=False)
    # The run's own claims (a pool's reservation, daemon/pools/) count as its to take.
    claims = await launch_scripts.gpu_claims(transport, workdir, p.share_gpus, run_id)
    if claims.total == 0:
        return GpuPlan(gate=False)  # no GPU on the host (or no nvidia-smi): nothing to share
    if p.gpus > claims.total:
        raise app_error(
            Kind.HOST_NOT_READY,
            f"{run_id} asks for {p.gpus} GPU(s), but {p.host} has {claims.total}; "
            "nothing was started.",
        )
    free = len(claims.free)
    if free >= p.gpus:
        return GpuPlan(gate=True)
    taken = _taken(claims)
    if p.wait:
        reason = f"waiting for {p.gpus} GPU(s) of {claims.total}: {taken}"
        return GpuPlan(gate=True, queued_reason=reason)
    holders = sorted({slot.holder for slot in claims.gpus if slot.holder})
    hint = f" (rtrain stop {p.host} {holders[0]})" if holders else ""
    raise app_error(
        Kind.HOST_NOT_READY,
        f"{run_id} asks for {p.gpus} GPU(s), but only {free} of {claims.total} on {p.host} "
        f"are free: {taken}. Nothing was started; add --wait to queue it on the host, or "
        f"stop a run{hint}." + ("" if p.share_gpus else _busy_hint(claims)),
        holders=holders,
    )


def gate_file() -> bytes:
    return script("gpus").encode()


def gate_prefix(p: StartParams, run_dir: str, run_id: str, plan: GpuPlan) -> list[str]:
    """The words the trainer's command starts with: the gate, or no GPU at all."""
    if p.gpus == 0:
        return ["env", "CUDA_VISIBLE_DEVICES="]
    if not plan.gate:
        return []
    workdir = run_dir.rsplit("/", 1)[0]
    share = "1" if p.share_gpus else "0"
    wait = "1" if p.wait else "0"
    return ["/bin/sh", GATE_FILE, "gate", workdir, run_id, str(p.gpus), share, wait, "--"]


def _taken(claims: launch_scripts.GpuClaims) -> str:
    words = []
    for slot in claims.gpus:
        if slot.state == "held":
            words.append(f"GPU {slot.index} is held by {slot.holder}")
        elif slot.state == "busy":
            words.append(f"GPU {slot.index} is busy ({slot.used_mib} MiB used by another process)")
    return ", ".join(words) or "none is free"


def _busy_hint(claims: launch_scripts.GpuClaims) -> str:
    if any(slot.state == "busy" for slot in claims.gpus):
        return " --share-gpus counts GPUs busy with other processes as free."
    return ""
