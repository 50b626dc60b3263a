"""Fixtures for hosts as people reach them: a login node that asks for a password as well as
a key, and bastions in front of the plain host (tests/hosts/login_host.py, bastions.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cli.conftest import Cli, cli  # noqa: F401  (the CLI tests' own fixture)
from tests.hosts import TestHosts
from tests.hosts.bastions import Bastions, bastions
from tests.hosts.login_host import LoginHost, login_host


@pytest.fixture(scope="session")
def login_node(ssh_hosts: TestHosts) -> Iterator[LoginHost]:
    """The alias, user and password of an sshd that wants a key and a password."""
    with login_host(ssh_hosts) as host:
        yield host


@pytest.fixture(scope="session")
def jumps(ssh_hosts: TestHosts) -> Iterator[Bastions]:
    """Two bastions and the aliases behind them (tests/hosts/bastions.py)."""
    with bastions(ssh_hosts) as started:
        yield started


__all__ = ["Cli"]
