"""preflight.sh: what a host offers a run (python, torch, GPUs, disk, the hub), decoded."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import msgspec

from .answers import Runner

log = logging.getLogger(__name__)


# ---- preflight.sh ------------------------------------------------------------------------

# A field the far side could not fill.
_NONE = ("", "-", "?", "[N/A]", "[Not Supported]", "N/A")


def _field(value: str | None) -> str | None:
    return None if value is None or value.strip() in _NONE else value.strip()


def _count(value: str | None) -> int | None:
    text = _field(value)
    return int(text) if text is not None and text.isdigit() else None


class ProbedTorch(msgspec.Struct, frozen=True):
    version: str
    cuda: str | None
    cuda_available: bool | None
    device_count: int | None


class ProbedGpu(msgspec.Struct, frozen=True):
    index: int
    name: str
    memory_mib: int | None
    memory_used_mib: int | None
    utilization_percent: int | None
    uuid: str | None
    driver_version: str | None


class ProbedGpuApp(msgspec.Struct, frozen=True):
    gpu_uuid: str
    pid: int
    used_mib: int | None
    run_id: str | None
    name: str | None


class ProbedCandidate(msgspec.Struct, frozen=True):
    path: str
    version: str | None
    torch: ProbedTorch | None
    executable: str | None
    error: str | None


class ProbedHub(msgspec.Struct, frozen=True):
    model: str
    # None when the Hub could not be reached at all.
    status: int | None
    error_code: str | None
    message: str | None


class PreflightReport(msgspec.Struct, kw_only=True):
    """Everything preflight.sh found; the script reports, the operation judges. Filled line
    by line as the answer is read, so not frozen; `exit` and `error_text` as in Answer."""

    exit: int
    error_text: str

    python_ok: bool = False
    python_version: str | None = None
    python_executable: str | None = None
    python_status: int | None = None
    python_error: str | None = None
    # The interpreter's PEP 508 marker environment (python_version, sys_platform, ...).
    python_env: dict[str, str] = {}
    torch: ProbedTorch | None = None
    torch_error: str | None = None
    # Distribution name -> installed version; None: not installed; "?": could not be read.
    dists: dict[str, str | None] = {}
    dists_unchecked: bool = False
    nvidia_smi: str | None = None
    nvidia_smi_error: str | None = None
    gpus: list[ProbedGpu] = []
    gpu_apps: list[ProbedGpuApp] = []
    driver_cuda: str | None = None
    candidates: list[ProbedCandidate] = []
    hub: list[ProbedHub] = []
    hub_endpoint: str | None = None
    hub_token_source: str | None = None
    hub_failed: str | None = None
    workdir: str | None = None
    workdir_ok: bool = False
    workdir_error: str | None = None
    free_bytes: int | None = None
    setsid: bool | None = None
    boot_id: str | None = None
    uname: str | None = None
    # Whether the script ran to its end, and what the login printed before it.
    complete: bool = False
    shell_noise: str | None = None


def _torch(
    version: str | None, cuda: str | None, available: str | None, count: str | None
) -> ProbedTorch | None:
    if _field(version) is None:
        return None
    assert version is not None
    avail = _field(available)
    return ProbedTorch(
        version=version.strip(),
        cuda=None if _field(cuda) in (None, "none") else _field(cuda),
        cuda_available=None if avail is None else avail == "1",
        device_count=_count(count),
    )


# The probe imports torch in each interpreter that has it; a slow disk makes that slow.
PREFLIGHT_TIMEOUT = 150


async def preflight(
    transport: Runner,
    python: str,
    workdir: str,
    *,
    dists: Sequence[str] = (),
    hf_models: Sequence[str] = (),
    hf_token: str = "",
) -> PreflightReport:
    """preflight.sh PYTHON WORKDIR [--dist NAME]... [--hf MODEL]...; the token on stdin only."""
    args = [python, workdir]
    for name in dists:
        args += ["--dist", name]
    for model in hf_models:
        args += ["--hf", model]
    stdin = f"{hf_token}\n".encode() if hf_models else None
    done = await transport.run("preflight", args, stdin=stdin, timeout=PREFLIGHT_TIMEOUT)
    return parse_preflight(done.stdout, done.returncode, done.error_text, done.noise)


def parse_preflight(
    stdout: bytes, exit: int = 0, error_text: str = "", noise_bytes: bytes = b""
) -> PreflightReport:
    report = PreflightReport(exit=exit, error_text=error_text)
    lines = stdout.decode(errors="replace").splitlines()
    # What the login printed before the script (the transport keeps it apart).
    noise = [line for line in noise_bytes.decode(errors="replace").splitlines() if line.strip()]
    if noise:
        report.shell_noise = "\n".join(noise)[:500]
    report.complete = "end" in lines
    reading = _Reading(report)
    for line in lines:
        key, *values = line.split("\t")
        reading.line(key, values)
    return reading.finish()


class _Reading:
    """One preflight answer being read, a line at a time, each family of keys by a step of
    its own; torch's lines are kept until the end (`torch`, `cuda`, `torch_gpus`)."""

    def __init__(self, report: PreflightReport) -> None:
        self.report = report
        self.torch_fields: dict[str, str] = {}
        self.torch_gpus: list[str] = []

    def line(self, key: str, values: list[str]) -> None:
        first = values[0] if values else ""
        steps = (self._python, self._torch_and_packages, self._gpus, self._hub, self._host)
        for step in steps:
            if step(key, first, values):
                return

    def finish(self) -> PreflightReport:
        if "torch" in self.torch_fields:
            padded = [*self.torch_gpus, "", ""][:2]
            self.report.torch = _torch(
                self.torch_fields["torch"], self.torch_fields.get("cuda"), *padded
            )
        return self.report

    def _python(self, key: str, first: str, values: list[str]) -> bool:
        report = self.report
        if key == "python_ok":
            report.python_ok = first == "1"
        elif key == "python_version":
            report.python_version = _field(first)
        elif key == "python_executable":
            report.python_executable = _field(first)
        elif key == "python_status":
            report.python_status = _count(first)
        elif key == "python_error":
            report.python_error = _field("\t".join(values))
        elif key == "python_env":
            report.python_env = dict(v.split("=", 1) for v in values if "=" in v)
        elif key == "candidate" and len(values) >= 8:
            report.candidates.append(_candidate(values))
        else:
            return False
        return True

    def _torch_and_packages(self, key: str, first: str, values: list[str]) -> bool:
        report = self.report
        if key in ("torch", "cuda"):
            self.torch_fields[key] = first
        elif key == "torch_gpus":
            self.torch_gpus = values
        elif key == "torch_error":
            report.torch_error = _field("\t".join(values))
        elif key == "dist" and values:
            version = values[1] if len(values) > 1 else "?"
            report.dists[first] = None if version == "-" else version
        elif key == "dists_unchecked":
            report.dists_unchecked = True
        else:
            return False
        return True

    def _gpus(self, key: str, first: str, values: list[str]) -> bool:
        report = self.report
        if key == "nvidia_smi":
            report.nvidia_smi = first
            report.nvidia_smi_error = _field(" ".join(values[1:]))
        elif key == "gpu" and len(values) >= 2:
            report.gpus.append(_gpu(values, len(report.gpus)))
        elif key == "gpu_app" and len(values) >= 4 and _count(values[1]) is not None:
            report.gpu_apps.append(_gpu_app(values))
        elif key == "driver_cuda":
            report.driver_cuda = _field(first)
        else:
            return False
        return True

    def _hub(self, key: str, first: str, values: list[str]) -> bool:
        report = self.report
        if key == "hf" and len(values) >= 2:
            padded = [*values, "", ""][:4]
            report.hub.append(
                ProbedHub(
                    model=first,
                    status=_count(padded[1]),
                    error_code=_field(padded[2]),
                    message=_field(padded[3]),
                )
            )
        elif key == "hf_endpoint":
            report.hub_endpoint = _field(first)
        elif key == "hf_token":
            report.hub_token_source = _field(first)
        elif key == "hf_failed":
            report.hub_failed = _field(first) or "the check ended without an answer"
        else:
            return False
        return True

    def _host(self, key: str, first: str, values: list[str]) -> bool:
        report = self.report
        if key == "workdir":
            report.workdir = _field(first)
        elif key == "workdir_ok":
            report.workdir_ok = first == "1"
        elif key == "workdir_error":
            report.workdir_error = _field("\t".join(values))
        elif key == "free_bytes":
            report.free_bytes = _count(first)
        elif key == "setsid":
            report.setsid = first == "1"
        elif key == "boot_id":
            report.boot_id = _field(first)
        elif key == "uname":
            report.uname = _field(first)
        else:
            return False
        return True


def _gpu(values: list[str], shown_before: int) -> ProbedGpu:
    padded = [*values, *[""] * 7][:7]
    index = _count(padded[0])
    return ProbedGpu(
        index=index if index is not None else shown_before,
        name=padded[1],
        memory_mib=_count(padded[2]),
        memory_used_mib=_count(padded[3]),
        utilization_percent=_count(padded[4]),
        uuid=_field(padded[5]),
        driver_version=_field(padded[6]),
    )


def _gpu_app(values: list[str]) -> ProbedGpuApp:
    return ProbedGpuApp(
        gpu_uuid=values[0].strip(),
        pid=_count(values[1]),  # type: ignore[arg-type]
        used_mib=_count(values[2]),
        run_id=_field(values[3]),
        name=_field(values[4]) if len(values) > 4 else None,
    )


def _candidate(values: list[str]) -> ProbedCandidate:
    path, version, tv, tc, ta, td, exe, error = values[:8]
    return ProbedCandidate(
        path=path,
        version=_field(version),
        torch=_torch(tv, tc, ta, td),
        executable=_field(exe),
        error=_field(error),
    )
