"""The suite's own Slurm cluster and login node, started once per session when a test asks."""

import os
from collections.abc import Iterator

import pytest

# The `rtrain` command with an isolated daemon, as the CLI tests drive it.
from tests.cli.conftest import cli  # noqa: F401
from tests.hosts.session import TestHosts
from tests.hosts.slurm_cluster import missing_slurm_tools
from tests.hosts.slurm_login import SlurmLogin, slurm_login


@pytest.fixture(scope="session")
def slurm(ssh_hosts: TestHosts) -> Iterator[SlurmLogin]:
    """A one-node cluster with 2 fake GPUs and accounting, behind the alias `cluster`.
    Skips where Slurm is not installed, except under CI=true, where that is a failure."""
    missing = missing_slurm_tools()
    if missing:
        reason = "the test Slurm cluster needs: " + ", ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI must provide them.", pytrace=False)
        pytest.skip(reason)
    with slurm_login(ssh_hosts) as login:
        yield login
