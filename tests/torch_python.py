"""A python with torch that the far test users can run, as on a host whose own python lacks it.

The far users' /usr/bin/python3 has no torch (a realistic image), so multi-rank tests run
torchrun with `--python` naming this venv: the CPU build of torch 2.13.0, installed from this
machine's wheel store once per machine (about a minute) and shared by every test session,
outside any user's home so no fixture's reset removes it. The real trainers' tests
(tests/trainers) need transformers and Lightning in it too: a venv built before they were
added gets them installed in place (about a minute more), torch kept as it is.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path
from typing import NoReturn

import pytest

from tests.required_tools import IN_CI

VENV = Path("/opt/rtrain-test-torch")
PYTHON = VENV / "bin" / "python"
BASE_PYTHON = "/usr/bin/python3"
REQUIREMENTS = ["torch==2.13.0", "numpy"]
# The current majors of the real trainers; `[torch]` brings accelerate, which Trainer needs.
# Keras 3 runs on torch (KERAS_BACKEND=torch): no TensorFlow.
TRAINERS = ["transformers[torch]>=5,<6", "lightning>=2,<3", "keras>=3,<4"]
# What the tracker tests run on the far side (tests/trackers): TensorBoard, a Jupyter kernel,
# MLflow's file store and W&B's offline runs.
TRACKERS = ["tensorboard", "ipykernel", "jupyter_client", "mlflow-skinny", "wandb"]
TORCH_PROBE = "import torch.distributed.run, numpy"
# Found, not imported: importing them all takes seconds per test on a busy machine.
TRAINERS_PROBE = (
    "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in "
    "('torch', 'numpy', 'transformers', 'accelerate', 'lightning', 'keras')))"
)


def _works(probe: str = TORCH_PROBE) -> bool:
    command = [str(PYTHON), "-c", probe]
    return PYTHON.exists() and subprocess.run(command, capture_output=True).returncode == 0


def far_torch_python() -> str:
    """The venv's python (built when missing), or the test skips (fails in CI)."""
    if _works():
        return str(PYTHON)
    try:
        with open(f"{VENV}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one builder; the others wait and reuse it
            if not _works():
                _build()
    except (OSError, subprocess.SubprocessError) as error:
        _missing(f"cannot build a torch venv for the far users at {VENV}: {error}")
    return str(PYTHON)


def far_trainers_python() -> str:
    """The venv's python with transformers, Lightning and Keras too (installed in place when
    missing), or the test skips (fails in CI)."""
    return _with_packages(TRAINERS_PROBE, TRAINERS, "transformers, lightning and keras")


def far_trackers_python() -> str:
    """The venv's python with the trackers too (installed in place when missing), or the
    test skips (fails in CI)."""
    modules = ("torch", "tensorboard", "ipykernel", "jupyter_client", "mlflow", "wandb")
    return _with_packages(_found(modules), TRACKERS, "the trackers")


def _found(modules: tuple[str, ...]) -> str:
    """A probe that fails unless every module is found (found, not imported: fast)."""
    return (
        "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in "
        f"{modules!r}))"
    )


def _with_packages(probe: str, packages: list[str], what: str) -> str:
    """The venv's python once `probe` passes, `packages` installed in place when it does
    not (torch pinned, so pip never swaps it), or the test skips (fails in CI)."""
    if _works(probe):
        return str(PYTHON)
    far_torch_python()
    try:
        with open(f"{VENV}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one installer; the others wait and reuse it
            if not _works(probe):
                _pip(PYTHON, [*REQUIREMENTS, *packages])
    except (OSError, subprocess.SubprocessError) as error:
        _missing(f"cannot install {what} into {VENV}: {error}")
    return str(PYTHON)


def _missing(message: str) -> NoReturn:
    if IN_CI:
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def _build() -> None:
    partial = Path(f"{VENV}.tmp-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([BASE_PYTHON, "-m", "venv", str(partial)], check=True, capture_output=True)
    _pip(partial / "bin" / "python", [*REQUIREMENTS, *TRAINERS])
    partial.rename(VENV)  # a venv finds itself from its python's path: the move is safe


def _pip(python: Path, requirements: list[str]) -> None:
    pip = [str(python), "-m", "pip", "install", "-q", *requirements]
    subprocess.run(pip, check=True, capture_output=True, timeout=900)


HYDRA_VENV = Path("/opt/rtrain-test-hydra")
HYDRA_PYTHON = HYDRA_VENV / "bin" / "python"
HYDRA_REQUIREMENTS = ["hydra-core>=1.3,<2"]


def far_hydra_python() -> str:
    """A python with hydra-core (and no torch) that the far users can run, for the jobs of
    the Hydra launcher's multiruns (built when missing), or the test skips (fails in CI)."""

    def works() -> bool:
        probe = [str(HYDRA_PYTHON), "-c", "import hydra"]
        return HYDRA_PYTHON.exists() and subprocess.run(probe, capture_output=True).returncode == 0

    if works():
        return str(HYDRA_PYTHON)
    try:
        with open(f"{HYDRA_VENV}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not works():
                partial = Path(f"{HYDRA_VENV}.tmp-{os.getpid()}")
                shutil.rmtree(partial, ignore_errors=True)
                shutil.rmtree(HYDRA_VENV, ignore_errors=True)
                subprocess.run([BASE_PYTHON, "-m", "venv", str(partial)], check=True)
                _pip(partial / "bin" / "python", HYDRA_REQUIREMENTS)
                partial.rename(HYDRA_VENV)
    except (OSError, subprocess.SubprocessError) as error:
        _missing(f"cannot build a hydra venv for the far users at {HYDRA_VENV}: {error}")
    return str(HYDRA_PYTHON)


if __name__ == "__main__":
    # CI builds them before the suite (.ci/run), so no test spends its deadline on a build.
    print(far_trainers_python())
    print(far_hydra_python())
