"""A python with torch that the far test users can run, as on a host whose own python lacks it.

The far users' /usr/bin/python3 has no torch (a realistic image), so multi-rank tests run
torchrun with `--python` naming this venv: the CPU build of torch 2.13.0, installed from this
machine's wheel store once per machine (about a minute) and shared by every test session,
outside any user's home so no fixture's reset removes it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.required_tools import IN_CI

VENV = Path("/opt/rtrain-test-torch")
PYTHON = VENV / "bin" / "python"
BASE_PYTHON = "/usr/bin/python3"
REQUIREMENTS = ["torch==2.13.0", "numpy"]


def _works() -> bool:
    probe = [str(PYTHON), "-c", "import torch.distributed.run, numpy"]
    return PYTHON.exists() and subprocess.run(probe, capture_output=True).returncode == 0


def far_torch_python() -> str:
    """The venv's python (built when missing), or the test skips (fails in CI)."""
    if _works():
        return str(PYTHON)
    try:
        with open(f"{VENV}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one builder; the others wait and reuse it
            if not _works():
                _build()
    except (OSError, subprocess.CalledProcessError) as error:
        message = f"cannot build a torch venv for the far users at {VENV}: {error}"
        if IN_CI:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return str(PYTHON)


def _build() -> None:
    partial = Path(f"{VENV}.tmp-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([BASE_PYTHON, "-m", "venv", str(partial)], check=True, capture_output=True)
    pip = [str(partial / "bin" / "python"), "-m", "pip", "install", "-q", *REQUIREMENTS]
    subprocess.run(pip, check=True, capture_output=True, timeout=900)
    partial.rename(VENV)  # a venv finds itself from its python's path: the move is safe
