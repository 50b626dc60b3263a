"""Runs across two SSH "hosts" on this machine: the plain host's user and the no-GPU user, each
with its own home (run dirs) behind the suite's sshd, rendezvousing on 127.0.0.1."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from tests.cli.conftest import Cli, cli, link  # noqa: F401  (fixtures for this folder)
from tests.hosts import NOGPU_USER


@pytest.fixture
def two_hosts(cli: Cli) -> Iterator[Cli]:  # noqa: F811
    """`cli`, and the second node's run dirs removed afterwards too."""
    try:
        yield cli
    finally:
        shutil.rmtree(cli.hosts.home(NOGPU_USER) / ".rtrain-cli" / cli.tag, ignore_errors=True)
