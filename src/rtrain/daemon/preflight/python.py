"""The python that can train: the requested one, torch against the GPUs, and a better one."""

from __future__ import annotations

from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from rtrain.daemon.remote.contract.preflight_scripts import (
    PreflightReport,
    ProbedCandidate,
    ProbedTorch,
)
from rtrain.protocol.messages import Finding, PythonCandidate, TorchInfo

# Exit statuses of a probe that ran out of time: timeout(1), or the probe's own SIGALRM.
_TIMED_OUT = (124, 142)


@dataclass
class PythonVerdict:
    reasons: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    candidates: list[PythonCandidate] = field(default_factory=list)
    suggested: str | None = None


def torch_info(torch: ProbedTorch | None) -> TorchInfo | None:
    if torch is None:
        return None
    return TorchInfo(
        version=torch.version,
        cuda=torch.cuda,
        cuda_available=torch.cuda_available,
        device_count=torch.device_count,
    )


def describe_torch(torch: ProbedTorch) -> str:
    """`torch 2.1.0+cu118 with CUDA 11.8 and sees 2 GPUs`, as the sentences use it."""
    if torch.cuda is None:
        return f"torch {torch.version} (a CPU-only build)"
    text = f"torch {torch.version} with CUDA {torch.cuda}"
    if torch.cuda_available is False:
        return f"{text} but sees no GPU"
    if torch.device_count is not None:
        return f"{text} and sees {torch.device_count} GPU{'' if torch.device_count == 1 else 's'}"
    return text


def _rank(candidate: ProbedCandidate) -> int:
    """Higher is better: a torch that sees GPUs, then a CUDA build, then any torch."""
    torch = candidate.torch
    if torch is None:
        return 0
    if torch.cuda_available and (torch.device_count or 0) > 0:
        return 3
    return 2 if torch.cuda is not None else 1


def _usage_failure(python: str, report: PreflightReport) -> str:
    """Why the requested python did not answer, as one true clause."""
    if report.python_error and report.python_status is None:
        return report.python_error  # "NAME: command not found"
    status = report.python_status
    if status in _TIMED_OUT:
        return "it did not answer within 45 s"
    if status == 127:
        return report.python_error or "command not found"
    if report.python_error:
        return f"{report.python_error} (exit status {status})"
    return (
        f"it exited with status {status} without answering the probe; is it a Python interpreter?"
    )


def _newer(built: str, supported: str) -> bool:
    try:
        return Version(built) > Version(supported)
    except InvalidVersion:
        return False


def _nowhere(python: str, report: PreflightReport) -> str:
    """`no python on the host has torch (looked at python3 and 2 others)`."""
    others = len({c.path for c in report.candidates})
    looked = f"{python} and {others} other{'' if others == 1 else 's'}" if others else python
    return f"no python on the host has torch (looked at {looked})"


def judge_python(python: str, gpus_wanted: int, report: PreflightReport) -> PythonVerdict:
    verdict = PythonVerdict(candidates=_candidates(report))
    ranked = sorted((c for c in report.candidates if c.torch is not None), key=_rank, reverse=True)
    best = ranked[0] if ranked else None
    if not report.python_ok:
        verdict.reasons.append(
            f"{python} not usable: {_usage_failure(python, report)}{_use_best(verdict, best, 0)}"
        )
        return verdict

    torch = report.torch
    executable = report.python_executable
    shown = f"{python} ({executable})" if executable and executable != python else python
    verdict.findings.append(Finding("python", f"{shown}: Python {report.python_version}"))
    if torch is None:
        _judge_without_torch(verdict, python, gpus_wanted, report, best)
        return verdict
    verdict.findings.append(Finding("torch", f"{python} has {describe_torch(torch)}"))
    if gpus_wanted == 0 or not report.gpus:
        return verdict
    _judge_torch_on_gpus(verdict, python, torch, report, best)
    return verdict


def _candidates(report: PreflightReport) -> list[PythonCandidate]:
    """Every python the probe looked at, as the result lists them."""
    return [
        PythonCandidate(
            path=candidate.path,
            usable=candidate.version is not None,
            version=candidate.version,
            executable=candidate.executable,
            torch=torch_info(candidate.torch),
            error=candidate.error,
        )
        for candidate in report.candidates
    ]


def _use_best(verdict: PythonVerdict, best: ProbedCandidate | None, better_than: int) -> str:
    """`; PATH has torch ... — use --python PATH` when another python ranks above
    `better_than` (and it becomes the suggested one); else nothing."""
    if best is None or _rank(best) <= better_than or best.torch is None:
        return ""
    verdict.suggested = best.path
    return f"; {best.path} has {describe_torch(best.torch)} — use --python {best.path}"


def _judge_without_torch(
    verdict: PythonVerdict,
    python: str,
    gpus_wanted: int,
    report: PreflightReport,
    best: ProbedCandidate | None,
) -> None:
    if report.torch_error:
        verdict.reasons.append(
            f"torch does not import in {python}: {report.torch_error}{_use_best(verdict, best, 0)}"
        )
        return
    # The trainer may not need torch (the demo trainer does not), so its absence is never
    # a reason by itself (`--require torch` makes it one); but it is what a GPU run most
    # often trips on, so it is a warning the verdict line repeats.
    gpu_run = gpus_wanted > 0 and len(report.gpus) > 0
    if gpu_run and best is not None and best.torch is not None and _rank(best) == 1:
        # The only torch is a CPU build: offering it would only move the refusal to the
        # next preflight (`--python X`: cannot train), so say it now, once.
        host_gpus = len(report.gpus)
        verdict.findings.append(
            Finding(
                "torch",
                f"{python} has no torch; {best.path} has {describe_torch(best.torch)}, which "
                f"cannot use this host's {host_gpus} GPU{'' if host_gpus == 1 else 's'}: "
                f"{_cuda_fix(report)}",
                "warning",
            )
        )
        return
    suggestion = _use_best(verdict, best, 0)
    if suggestion:
        verdict.findings.append(Finding("torch", f"{python} has no torch{suggestion}", "warning"))
    elif gpus_wanted > 0 and len(report.gpus) > 0:
        verdict.findings.append(Finding("torch", _nowhere(python, report), "warning"))
    else:
        verdict.findings.append(Finding("torch", _nowhere(python, report), "info"))


def _cuda_fix(report: PreflightReport) -> str:
    """What makes a CPU-only torch train on the host's GPUs."""
    driver = report.driver_cuda
    return f"install a torch built for CUDA {driver} or older" if driver else "install a CUDA build"


def _judge_torch_on_gpus(
    verdict: PythonVerdict,
    python: str,
    torch: ProbedTorch,
    report: PreflightReport,
    best: ProbedCandidate | None,
) -> None:
    """Whether the torch found can use the host's GPUs, for a run that wants some."""
    host_gpus = len(report.gpus)
    if torch.cuda is None:
        fix = _cuda_fix(report)
        suggestion = _use_best(verdict, best, 1)
        verdict.reasons.append(
            f"{python} has torch {torch.version}, a CPU-only build, on a host with "
            f"{host_gpus} GPU{'' if host_gpus == 1 else 's'}: "
            + (suggestion.removeprefix("; ") if suggestion else fix)
        )
    elif report.driver_cuda and _newer(torch.cuda, report.driver_cuda):
        driver_version = next((g.driver_version for g in report.gpus if g.driver_version), None)
        driver = f"the driver ({driver_version})" if driver_version else "the driver"
        verdict.reasons.append(
            f"torch {torch.version} is built for CUDA {torch.cuda}, but {driver} supports "
            f"CUDA {report.driver_cuda} at most: install a torch built for CUDA "
            f"{report.driver_cuda} or older, or update the driver{_use_best(verdict, best, 2)}"
        )
    elif torch.cuda_available is False:
        verdict.reasons.append(
            f"torch {torch.version} in {python} cannot use the GPUs: "
            f"torch.cuda.is_available() is False although nvidia-smi lists {host_gpus}"
            + _use_best(verdict, best, 2)
        )
