"""host/preflight on a host with two pythons: the right interpreter, torch against the GPUs,
packages, disk, GPUs in use and a noisy shell, through the real daemon and sshd."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hosts.pythons_host import PYTHONS_USER, PythonsHost
from tests.operations.harness import Ops


def preflight(ops: Ops, host: str = "pythons", **params: object) -> Any:
    return ops.request("host/preflight", {"host": host, **params})


def test_names_the_python_that_has_torch(ops: Ops, pythons_host: PythonsHost) -> None:
    # A CPU run: the host's torches are CPU-only builds, which a GPU run is never offered.
    result = preflight(ops, python=pythons_host.bare_python, gpus=0)

    # No torch is not a reason by itself (the trainer may not need it): a warning that names
    # the python to use instead.
    assert result.ok, result.reasons
    bare, train = pythons_host.bare_python, pythons_host.train_python
    [warning] = [f for f in result.findings if f.topic == "torch"]
    assert warning.level == "warning"
    assert warning.text.startswith(f"{bare} has no torch; ")
    assert result.suggested_python is not None
    assert warning.text.endswith(f"— use --python {result.suggested_python}")
    with_torch = {c.path: c for c in result.python_candidates if c.torch is not None}
    assert train in with_torch, result.python_candidates
    assert with_torch[train].torch.version.startswith("2.")
    assert with_torch[train].torch.cuda is None
    assert result.suggested_python in with_torch
    # The requested python is not offered as its own alternative.
    assert bare not in {c.path for c in result.python_candidates}

    # A trainer that needs torch says so, and then it is a reason.
    required = preflight(ops, python=bare, requires=["torch"])
    assert not required.ok
    assert any(r.startswith(f"torch is not installed in {bare}") for r in required.reasons), (
        required.reasons
    )


def test_a_cpu_only_torch_on_a_gpu_host_is_a_reason(ops: Ops, pythons_host: PythonsHost) -> None:
    result = preflight(ops, python=pythons_host.train_python, gpus=1)

    assert not result.ok
    assert result.torch is not None and result.torch.cuda is None
    assert result.torch_version == result.torch.version
    assert len(result.gpus) == 2
    [reason] = result.reasons
    assert "a CPU-only build, on a host with 2 GPUs" in reason, reason
    assert "CUDA 12.4 or older" in reason, reason
    assert result.driver.version == "550.54.15"
    assert result.driver.cuda_version == "12.4"

    # The same torch for a CPU run is fine.
    assert preflight(ops, python=pythons_host.train_python, gpus=0).ok


def test_requirements_satisfied_missing_and_too_old(ops: Ops, pythons_host: PythonsHost) -> None:
    python = pythons_host.train_python
    requires = ["torch>=2", "numpy>=999", "peft", "typing-extensions; python_version < '3'"]
    result = preflight(ops, python=python, gpus=0, requires=requires)

    assert not result.ok
    checks = {check.requirement: check for check in result.packages}
    assert checks["torch>=2"].ok and checks["torch>=2"].installed.startswith("2.")
    too_old = checks["numpy>=999"]
    assert not too_old.ok and too_old.installed
    assert too_old.fix == f"{python} -m pip install 'numpy>=999'"
    missing = checks["peft"]
    assert not missing.ok and missing.installed is None
    assert missing.fix == f"{python} -m pip install peft"
    # A marker that does not hold for the host's python needs nothing.
    assert checks["typing-extensions; python_version < '3'"].ok
    assert result.reasons == [
        f"numpy {too_old.installed} is installed in {python}, >=999 is needed; "
        f"fix: {python} -m pip install 'numpy>=999'",
        f"peft is not installed in {python}; fix: {python} -m pip install peft",
    ]

    assert preflight(ops, python=python, gpus=0, requires=["torch>=2", "numpy"]).ok


def test_requirements_are_checked_before_anything_reaches_the_host(ops: Ops) -> None:
    with pytest.raises(Exception) as refused:
        preflight(ops, host="plain", requires=["torch >= = 2"])
    assert "is not one pip understands" in str(refused.value)


def test_gpus_in_use_by_another_process(ops: Ops, pythons_host: PythonsHost) -> None:
    # Real processes of the far user compute on the fake GPUs (fake_nvidia_smi.py): one not
    # rtrain's on GPU 1, one marked as a run of rtrain's on GPU 0.
    # (Group too: a process whose group differs is one the far user cannot inspect.)
    as_user: dict[str, Any] = {
        "user": PYTHONS_USER,
        "group": PYTHONS_USER,
        "extra_groups": [],
        "cwd": "/",
    }
    path = os.environ["PATH"]
    other = subprocess.Popen(
        ["sleep", "300"], env={"PATH": path, "RTRAIN_FAKE_GPU_LOAD": "1:87:30000"}, **as_user
    )
    ours = subprocess.Popen(
        ["sleep", "300"],
        env={"PATH": path, "RTRAIN_FAKE_GPU_LOAD": "0:40:2000", "RTRAIN_RUN_ID": "run-ours"},
        **as_user,
    )
    try:
        result = preflight(ops, gpus=0, python=pythons_host.train_python)
    finally:
        for process in (other, ours):
            process.kill()
            process.wait()

    assert result.ok, result.reasons
    gpu0, gpu1 = result.gpus
    assert (gpu0.memory_used_mib, gpu0.utilization_percent) == (2000, 40)
    assert [(p.pid, p.run_id) for p in gpu0.processes] == [(ours.pid, "run-ours")]
    assert not gpu0.in_use_by_other
    assert (gpu1.memory_used_mib, gpu1.utilization_percent) == (30000, 87)
    assert [(p.pid, p.run_id, p.name) for p in gpu1.processes] == [(other.pid, None, "sleep")]
    assert gpu1.in_use_by_other
    assert result.gpus_free == 1
    texts = [f.text for f in result.findings if f.topic == "gpu"]
    assert (
        "GPU 1: NVIDIA H100 80GB HBM3, 30000 of 81559 MiB used, 87% busy, "
        f"pid {other.pid} sleep (not rtrain's)" in texts
    )


def test_a_noisy_shell_is_reported_as_information(ops: Ops, pythons_host: PythonsHost) -> None:
    alias = pythons_host.alias(
        f"noisy-{uuid.uuid4().hex[:6]}", {"RTRAIN_TEST_NOISE": "Welcome-to-the-lab"}
    )
    result = preflight(ops, host=alias, gpus=0, python=pythons_host.train_python)

    assert result.ok, result.reasons
    assert result.shell_noise == "Welcome-to-the-lab"
    [finding] = [f for f in result.findings if f.topic == "shell"]
    assert finding.level == "info" and "'Welcome-to-the-lab'" in finding.text
    assert result.python_version


@pytest.fixture
def small_disk(pythons_host: PythonsHost) -> Iterator[str]:
    """A 128 MiB tmpfs the far user owns, as its work directory."""
    mount_point = pythons_host.home / f"disk-{uuid.uuid4().hex[:8]}"
    mount_point.mkdir()
    account = os.stat(pythons_host.home)
    subprocess.run(
        [
            "mount",
            "-t",
            "tmpfs",
            "-o",
            f"size=128m,uid={account.st_uid},gid={account.st_gid},mode=0700",
            "tmpfs",
            str(mount_point),
        ],
        check=True,
    )
    try:
        yield str(mount_point)
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)
        mount_point.rmdir()


def test_disk_against_what_start_would_ship(
    ops: Ops, pythons_host: PythonsHost, small_disk: str, tmp_path: Path
) -> None:
    small = tmp_path / "small.jsonl"
    small.write_bytes(b"x" * 1024)
    big = tmp_path / "big-dataset"
    big.mkdir()
    # Sparse: 100 MiB as start would ship it, nothing on this machine's disk.
    with open(big / "part-0.bin", "wb") as part:
        part.truncate(100 * 1024 * 1024)

    python = pythons_host.train_python
    fits = preflight(ops, gpus=0, python=python, workdir=small_disk, inputs=[str(small)])
    assert fits.ok, fits.reasons
    assert fits.disk.ship_bytes == 1024 and fits.disk.ok
    assert fits.disk.margin_bytes == 64 * 1024 * 1024

    too_big = preflight(
        ops, gpus=0, python=python, workdir=small_disk, inputs=[str(small), str(big)]
    )
    assert not too_big.ok
    assert too_big.disk.ship_bytes == 1024 + 100 * 1024 * 1024 and not too_big.disk.ok
    [reason] = too_big.reasons
    assert reason.startswith("not enough disk: the workdir has 134.2 MB free, ")
    assert "start would ship 104.9 MB plus a margin of 67.1 MB" in reason, reason


def test_a_missing_input_is_refused_before_the_host(ops: Ops, tmp_path: Path) -> None:
    with pytest.raises(Exception) as refused:
        preflight(ops, host="plain", inputs=[str(tmp_path / "nope.jsonl")])
    assert "does not exist on this machine" in str(refused.value)


@pytest.fixture
def torch_built_for(pythons_host: PythonsHost) -> Iterator[Callable[[str, bool], str]]:
    """A python on the far side whose torch reports the given CUDA build and availability: a
    stand-in package (the suite has only the CPU build), reached through a wrapper script."""
    made: list[Path] = []

    def build(cuda: str, available: bool) -> str:
        folder = pythons_host.home / f"stand-in-torch-{uuid.uuid4().hex[:8]}"
        (folder / "site" / "torch").mkdir(parents=True)
        (folder / "site" / "torch" / "__init__.py").write_text(
            f'__version__ = "2.7.0+cu{cuda.replace(".", "")}"\n'
            f"class version:\n    cuda = {cuda!r}\n"
            f"class cuda:\n    is_available = staticmethod(lambda: {available})\n"
            "    device_count = staticmethod(lambda: 2)\n"
        )
        wrapper = folder / "python"
        wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{folder / "site"}" exec python3 "$@"\n')
        for path in (folder, folder / "site", folder / "site" / "torch"):
            path.chmod(0o755)
        wrapper.chmod(0o755)
        made.append(folder)
        return str(wrapper)

    yield build
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_torch_built_for_a_newer_cuda_than_the_driver_is_a_reason(
    ops: Ops, torch_built_for: Callable[[str, bool], str]
) -> None:
    result = preflight(ops, python=torch_built_for("12.8", True), gpus=1)
    assert not result.ok
    [reason] = result.reasons
    assert reason.startswith(
        "torch 2.7.0+cu128 is built for CUDA 12.8, but the driver (550.54.15) supports "
        "CUDA 12.4 at most: install a torch built for CUDA 12.4 or older"
    ), reason
    assert (result.torch.cuda, result.torch.cuda_available, result.torch.device_count) == (
        "12.8",
        True,
        2,
    )

    blind = preflight(ops, python=torch_built_for("12.1", False), gpus=1)
    [reason] = blind.reasons
    assert "torch.cuda.is_available() is False although nvidia-smi lists 2" in reason, reason

    assert preflight(ops, python=torch_built_for("12.1", True), gpus=2).ok
