"""Tools a test needs on this machine: skipped where missing, but a failure under CI=true,
where .ci/run installs them all."""

from __future__ import annotations

import os
import shutil

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def need(tool: str) -> str:
    """The path of `tool`, or the test skips (fails in CI) saying how to install it."""
    found = shutil.which(tool)
    if found is None:
        message = f"{tool} is not installed (apt-get install {tool})"
        if IN_CI:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return found
