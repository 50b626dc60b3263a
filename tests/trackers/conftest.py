"""The tracker tests run in the CLI tests' world (tests/cli/conftest.py), with a far python that
has torch and the trackers (tests/torch_python.py)."""

from __future__ import annotations

import pytest

from tests.cli.conftest import cli  # noqa: F401  (a fixture, used by name)
from tests.torch_python import far_trackers_python


@pytest.fixture(scope="session")
def trackers_python() -> str:
    return far_trackers_python()
