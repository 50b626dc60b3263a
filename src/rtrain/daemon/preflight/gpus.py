"""GPUs: how many, the driver and its CUDA, and which are in use by something not rtrain's."""

from __future__ import annotations

from rtrain.daemon.remote.contract.preflight_scripts import PreflightReport
from rtrain.protocol.messages import DriverInfo, Finding, GpuInfo, GpuProcess

# Memory in use with no process listed: another container's process (its pid is not visible
# from here), not the driver's own few hundred MiB.
FOREIGN_MEMORY_MIB = 1024


def gpu_list(report: PreflightReport) -> list[GpuInfo]:
    gpus = []
    for probed in report.gpus:
        processes = [
            GpuProcess(
                pid=app.pid,
                used_memory_mib=None if app.used_mib is None else float(app.used_mib),
                name=app.name,
                run_id=app.run_id,
            )
            for app in report.gpu_apps
            if probed.uuid is not None and app.gpu_uuid == probed.uuid
        ]
        foreign = any(process.run_id is None for process in processes) or (
            not processes and (probed.memory_used_mib or 0) >= FOREIGN_MEMORY_MIB
        )
        gpus.append(
            GpuInfo(
                index=probed.index,
                name=probed.name,
                memory_mib=probed.memory_mib,
                memory_used_mib=probed.memory_used_mib,
                utilization_percent=probed.utilization_percent,
                uuid=probed.uuid,
                processes=processes,
                in_use_by_other=foreign,
            )
        )
    return gpus


def driver_info(report: PreflightReport) -> DriverInfo | None:
    version = next((gpu.driver_version for gpu in report.gpus if gpu.driver_version), None)
    if version is None and report.driver_cuda is None:
        return None
    return DriverInfo(version=version, cuda_version=report.driver_cuda)


def count_reason(wanted: int, gpus: list[GpuInfo], report: PreflightReport) -> str | None:
    if len(gpus) >= wanted:
        return None
    reason = f"needs {wanted} GPU(s), found {len(gpus)}"
    if gpus:
        return reason
    if report.nvidia_smi == "missing":
        return f"{reason} (nvidia-smi not found: no NVIDIA driver on the host's PATH)"
    if report.nvidia_smi == "error":
        return f"{reason} (nvidia-smi failed: {report.nvidia_smi_error or 'no message'})"
    return f"{reason} (nvidia-smi lists none)"


def gpu_findings(gpus: list[GpuInfo], driver: DriverInfo | None) -> list[Finding]:
    findings = []
    if driver is not None:
        cuda = f", CUDA {driver.cuda_version} at most" if driver.cuda_version else ""
        findings.append(Finding("driver", f"NVIDIA driver {driver.version or '?'}{cuda}"))
    for gpu in gpus:
        use = []
        if gpu.memory_used_mib is not None and gpu.memory_mib is not None:
            use.append(f"{gpu.memory_used_mib} of {gpu.memory_mib} MiB used")
        if gpu.utilization_percent is not None:
            use.append(f"{gpu.utilization_percent}% busy")
        for process in gpu.processes:
            owner = f"run {process.run_id}" if process.run_id else "not rtrain's"
            name = f" {process.name}" if process.name else ""
            use.append(f"pid {process.pid}{name} ({owner})")
        if gpu.in_use_by_other and not gpu.processes:
            use.append("in use by a process not visible from here")
        text = f"GPU {gpu.index}: {gpu.name}" + (f", {', '.join(use)}" if use else "")
        findings.append(Finding("gpu", text, "warning" if gpu.in_use_by_other else "ok"))
    return findings
