"""preflight.sh: what a user learns about a host before shipping anything to it."""

from __future__ import annotations

import os
import platform
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import PYTHON, Remote


@pytest.fixture
def bare_python(tmp_path: Path) -> str:
    """An interpreter without site-packages: fast to probe, and never has torch."""
    wrapper = tmp_path / "bare-python"
    wrapper.write_text(f'#!/bin/sh\nexec "{PYTHON}" -I -S "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


@pytest.fixture
def fake_nvidia_smi(
    tmp_path: Path, stripped_path: Callable[[set[str]], str]
) -> Callable[[str], str]:
    """A PATH whose nvidia-smi is the given shell script body (and no other nvidia-smi)."""

    def build(body: str) -> str:
        bin_dir = tmp_path / "gpu-bin"
        bin_dir.mkdir()
        tool = bin_dir / "nvidia-smi"
        tool.write_text("#!/bin/sh\n" + body)
        tool.chmod(0o755)
        return f"{bin_dir}{os.pathsep}{stripped_path({'nvidia-smi'})}"

    return build


@pytest.mark.slow
def test_reports_python_workdir_and_no_gpu(
    remote: Remote, bare_python: str, stripped_path: Callable[[set[str]], str]
) -> None:
    env = {**remote.env, "PATH": stripped_path({"nvidia-smi"})}
    result = remote.run("preflight", bare_python, "~/x", env=env)

    assert result.returncode == 0, result
    assert result.value("python_ok") == "1"
    assert result.value("python_version") == platform.python_version()
    assert result.value("nvidia_smi") == "missing"
    assert result.values("gpu") == []
    assert result.value("workdir") == str(remote.home / "x")
    assert result.value("workdir_ok") == "1"
    assert stat.S_IMODE((remote.home / "x").stat().st_mode) == 0o700
    assert list((remote.home / "x").iterdir()) == [], "the probe file must be removed"
    assert int(result.value("free_bytes")) > 0
    assert result.value("setsid") == "1"
    assert result.value("boot_id") == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert result.value("uname").startswith(platform.system())
    assert result.values("torch") == [] and result.values("cuda") == []


@pytest.mark.slow
def test_tilde_workdir_never_becomes_a_literal_directory(remote: Remote, bare_python: str) -> None:
    result = remote.run("preflight", bare_python, "~/deep/er")

    assert result.value("workdir") == str(remote.home / "deep" / "er")
    assert (remote.home / "deep" / "er").is_dir()
    assert not (remote.home / "~").exists()
    assert not any(path.name == "~" for path in remote.home.rglob("*"))


@pytest.mark.parametrize(("cuda", "reported"), [('"12.4"', "12.4"), ("None", "none")])
def test_torch_and_its_cuda_are_reported_when_torch_imports(
    remote: Remote, tmp_path: Path, cuda: str, reported: str
) -> None:
    # A stand-in torch package: quick to import, and the same on every machine.
    package = tmp_path / "site" / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        f'__version__ = "2.5.1+cu124"\nclass version:\n    cuda = {cuda}\n'
    )
    python = tmp_path / "python-with-torch"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{tmp_path / "site"}" exec "{PYTHON}" -S "$@"\n')
    python.chmod(0o755)

    result = remote.run("preflight", str(python), "~/x")

    assert result.value("torch") == "2.5.1+cu124"
    assert result.value("cuda") == reported


@pytest.mark.slow
def test_lists_each_gpu(
    remote: Remote, bare_python: str, fake_nvidia_smi: Callable[[str], str]
) -> None:
    # What the real nvidia-smi answers to preflight's query: a name may hold a comma.
    path = fake_nvidia_smi(
        'case "$*" in\n'
        "*--query-gpu=*) printf '0, NVIDIA H100 80GB HBM3, 81559, 30000, 87, GPU-a, 550.54.15\\n"
        "1, NVIDIA A100-SXM4-80GB, rev 2, 81920, [N/A], [Not Supported], GPU-b, 550.54.15\\n' ;;\n"
        "*--query-compute-apps=*) printf 'GPU-a, 4242, 30000, /usr/bin/python3\\n' ;;\n"
        "*) echo '| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4   |' ;;\n"
        "esac\n"
    )
    result = remote.run("preflight", bare_python, "~/x", env={**remote.env, "PATH": path})

    assert result.values("gpu") == [
        ["0", "NVIDIA H100 80GB HBM3", "81559", "30000", "87", "GPU-a", "550.54.15"],
        [
            "1",
            "NVIDIA A100-SXM4-80GB, rev 2",
            "81920",
            "[N/A]",
            "[Not Supported]",
            "GPU-b",
            "550.54.15",
        ],
    ]
    assert result.value("driver_cuda") == "12.4"
    # Not a process of the far user's: its environment cannot be read, so it is no run's.
    assert result.values("gpu_app") == [["GPU-a", "4242", "30000", "-", "/usr/bin/python3"]]
    assert result.values("nvidia_smi") == []


@pytest.mark.slow
def test_a_short_gpu_line_still_names_the_gpu(
    remote: Remote, bare_python: str, fake_nvidia_smi: Callable[[str], str]
) -> None:
    path = fake_nvidia_smi("printf '0, NVIDIA H100 80GB HBM3, 81559\\n'\n")
    result = remote.run("preflight", bare_python, "~/x", env={**remote.env, "PATH": path})

    assert result.values("gpu") == [["0", "NVIDIA H100 80GB HBM3", "81559"]]


@pytest.mark.slow
def test_broken_driver_is_an_error_with_its_message(
    remote: Remote, bare_python: str, fake_nvidia_smi: Callable[[str], str]
) -> None:
    path = fake_nvidia_smi(
        "echo 'NVIDIA-SMI has failed because it could not communicate with the driver'\nexit 9\n"
    )
    result = remote.run("preflight", bare_python, "~/x", env={**remote.env, "PATH": path})

    assert result.values("nvidia_smi") == [
        ["error", "NVIDIA-SMI has failed because it could not communicate with the driver"]
    ]
    assert result.values("gpu") == []


def test_missing_python_is_reported_not_fatal(remote: Remote) -> None:
    result = remote.run("preflight", "python-that-is-not-there", "~/x")

    assert result.returncode == 0
    assert result.value("python_ok") == "0"
    assert "python-that-is-not-there" in result.value("python_error")
    assert result.value("workdir_ok") == "1"


def test_unusable_workdir_is_reported(remote: Remote, bare_python: str) -> None:
    (remote.home / "a-file").write_text("not a directory")
    result = remote.run("preflight", bare_python, "~/a-file/run")

    assert result.returncode == 0
    assert result.value("workdir_ok") == "0"
    assert result.value("workdir_error") != ""


def _venv(root: Path, torch_version: str | None = None) -> str:
    """A venv as `python -m venv` lays one out (pyvenv.cfg, bin/python), optionally with a
    stand-in torch package (a CPU build: the probe reads its version.py, imports nothing)."""
    base = Path(os.path.realpath(PYTHON))
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = root / "lib" / version / "site-packages"
    site.mkdir(parents=True)
    (root / "bin").mkdir()
    (root / "bin" / "python").symlink_to(base)
    (root / "pyvenv.cfg").write_text(
        f"home = {base.parent}\ninclude-system-site-packages = false\n"
    )
    if torch_version is not None:
        (site / "torch").mkdir()
        (site / "torch" / "__init__.py").write_text(f"__version__ = {torch_version!r}\n")
        (site / "torch" / "version.py").write_text(
            f"__version__ = {torch_version!r}\ncuda = None\n"
        )
    return str(root / "bin" / "python")


def test_a_torch_venv_is_found_behind_more_pythons_than_are_probed(
    remote: Remote, bare_python: str
) -> None:
    # More interpreters without torch than the probe limit (12), all sorted before the one
    # with torch: the torch on disk puts it first, so the limit never hides it.
    for number in range(14):
        _venv(remote.home / f"a{number:02d}")
    with_torch = _venv(remote.home / "zz-train", torch_version="2.7.0+cpu")

    result = remote.run("preflight", bare_python, "~/x", timeout=120)

    assert result.returncode == 0, result
    found = {fields[0]: fields for fields in result.values("candidate")}
    assert with_torch in found, sorted(found)
    assert found[with_torch][2] == "2.7.0+cpu", found[with_torch]
