"""host/preflight end to end: a verdict, and one sentence per problem."""

from __future__ import annotations

import stat
from typing import Any

from tests.operations.harness import Ops
from tests.torch_python import far_torch_python


def preflight(ops: Ops, host: str = "plain", **params: object) -> Any:
    return ops.request("host/preflight", {"host": host, **params})


def test_plain_host_is_ready(ops: Ops) -> None:
    result = preflight(ops, gpus=2, workdir=ops.workdir)
    assert result.ok, result.reasons
    assert result.reasons == []
    assert result.transport == "exec"
    assert [gpu.index for gpu in result.gpus] == [0, 1]
    assert result.gpus[0].name == "NVIDIA H100 80GB HBM3"
    assert result.gpus[0].memory_mib == 81559
    assert result.python_version and result.python_version.startswith("3.")
    assert result.workdir == str(ops.far_workdir)
    assert result.free_disk_bytes and result.free_disk_bytes > 0
    # The workdir was created, private, and the write probe left nothing behind.
    assert stat.S_IMODE(ops.far_workdir.stat().st_mode) == 0o700
    assert list(ops.far_workdir.iterdir()) == []
    # No torch in python3 is not a reason (the trainer may not need it).
    assert result.torch_version is None


def test_too_few_gpus(ops: Ops) -> None:
    result = preflight(ops, gpus=3, workdir=ops.workdir)
    assert not result.ok
    # GPUs were found: no parenthesis claiming none are visible.
    assert result.reasons == ["needs 3 GPU(s), found 2"]


def test_host_without_nvidia_smi(ops: Ops) -> None:
    result = preflight(ops, host="nogpu")
    assert not result.ok
    [reason] = result.reasons
    assert reason.startswith("needs 1 GPU(s), found 0 (")
    assert "nvidia-smi not found" in reason
    # Everything else about the host is fine, and said so.
    assert result.python_version


def test_nogpu_host_is_fine_for_a_cpu_run(ops: Ops) -> None:
    assert preflight(ops, host="nogpu", gpus=0).ok


def test_unusable_python(ops: Ops) -> None:
    result = preflight(ops, python="python3.99", gpus=0, workdir=ops.workdir)
    assert not result.ok
    [reason] = result.reasons
    assert reason.startswith("python3.99 not usable: ")
    assert "not found" in reason


def test_unwritable_workdir(ops: Ops) -> None:
    result = preflight(ops, gpus=0, workdir="/root/rtrain-cannot-write-here")
    assert not result.ok
    [reason] = result.reasons
    assert reason.startswith("workdir /root/rtrain-cannot-write-here not usable: ")


def test_an_interpreter_that_fails_says_so_in_a_sentence(ops: Ops) -> None:
    result = preflight(ops, python="/bin/false", gpus=0, workdir=ops.workdir)
    assert not result.ok
    [reason] = [r for r in result.reasons if r.startswith("/bin/false")]
    assert reason.startswith(
        "/bin/false not usable: it exited with status 1 without answering the probe; "
        "is it a Python interpreter?"
    ), reason


def test_a_program_that_is_not_python_never_shows_the_probe(ops: Ops) -> None:
    result = preflight(ops, python="ls", gpus=0, workdir=ops.workdir)
    assert not result.ok
    [reason] = [r for r in result.reasons if r.startswith("ls ")]
    assert reason.startswith("ls not usable: it exited with status 2 without answering"), reason
    for text in [*result.reasons, *(f.text for f in result.findings)]:
        assert "import" not in text and "RTRAIN_PROBE" not in text and "exec(" not in text


def test_a_torch_venv_under_opt_is_found_and_named(ops: Ops) -> None:
    # The far user's python3 has no torch; the suite's torch venv lives under /opt, as an
    # image's own venv often does (/opt/venv, /opt/conda, /opt/<app>).
    venv_python = far_torch_python()
    result = preflight(ops, gpus=0, workdir=ops.workdir)

    assert result.ok, result.reasons
    assert result.suggested_python == venv_python, result.python_candidates
    [candidate] = [c for c in result.python_candidates if c.path == venv_python]
    assert candidate.torch is not None and candidate.torch.version.startswith("2.")
    [warning] = [f for f in result.findings if f.topic == "torch"]
    assert warning.level == "warning"
    assert warning.text == (
        f"python3 has no torch; {venv_python} has torch {candidate.torch.version} "
        f"(a CPU-only build) — use --python {venv_python}"
    )

    # For a GPU run that CPU-only build is no way out: said at once, and not suggested
    # (with `--python` naming it, preflight would only then say it cannot use the GPUs).
    gpu_run = preflight(ops, gpus=2, workdir=ops.workdir)
    assert gpu_run.ok, gpu_run.reasons
    assert gpu_run.suggested_python is None
    [warning] = [f for f in gpu_run.findings if f.topic == "torch"]
    assert warning.level == "warning"
    assert warning.text == (
        f"python3 has no torch; {venv_python} has torch {candidate.torch.version} "
        "(a CPU-only build), which cannot use this host's 2 GPUs: install a torch built for "
        "CUDA 12.4 or older"
    ), warning.text
    assert "use --python" not in warning.text


def test_a_gpu_host_without_torch_anywhere_says_so(ops: Ops, notorch_host: str) -> None:
    far_torch_python()  # there is one on this machine, out of the host's sight
    result = preflight(ops, host=notorch_host, gpus=2)

    assert result.ok, result.reasons
    assert len(result.gpus) == 2
    assert result.suggested_python is None
    assert all(c.torch is None for c in result.python_candidates), result.python_candidates
    [warning] = [f for f in result.findings if f.topic == "torch"]
    assert warning.level == "warning", warning
    assert warning.text.startswith("no python on the host has torch (looked at python3"), warning

    # For a CPU run the same is information only.
    cpu = preflight(ops, host=notorch_host, gpus=0)
    [info] = [f for f in cpu.findings if f.topic == "torch"]
    assert info.level == "info" and info.text == warning.text
