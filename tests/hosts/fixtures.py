"""pytest plugin: the session-scoped `ssh_hosts` fixture (see tests/hosts/README.md)."""

import os
from collections.abc import Iterator

import pytest

from tests.hosts.container_image import import_image, rootfs_tarball
from tests.hosts.no_torch_host import missing_tools, no_torch_host
from tests.hosts.pythons_host import PythonsHost, torch_available_here
from tests.hosts.session import TestHosts, missing_requirements, start_test_hosts
from tests.hosts.user_accounts import GPU_USER
from tests.required_tools import need


@pytest.fixture(scope="session")
def ssh_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestHosts]:
    """The suite's own SSH hosts, started once per session. Skips where this machine cannot
    run them, except under CI=true, where a missing component is a failure."""
    missing = missing_requirements()
    if missing:
        reason = "the test SSH hosts need: " + ", ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI must provide them.", pytrace=False)
        pytest.skip(reason)
    hosts = start_test_hosts(tmp_path_factory.mktemp("ssh-hosts"))
    try:
        yield hosts
    finally:
        hosts.close()


# Session fixtures that are costly to start (or, for Slurm, one cluster a machine can
# comfortably hold): under pytest-xdist's `--dist loadgroup` the tests that use one run on
# one worker, which starts it once.
WORKER_GROUPS = {"slurm": "slurm", "pythons_host": "pythons", "notorch_host": "notorch"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    grouping = config.pluginmanager.hasplugin("xdist")
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        # Tests that use the hosts carry the `ssh` marker, so `-m "not ssh"` leaves them out.
        if {"ssh_hosts", "pythons_host", "notorch_host"} & fixtures:
            item.add_marker(pytest.mark.ssh)
        groups = sorted(WORKER_GROUPS[name] for name in WORKER_GROUPS.keys() & fixtures)
        if grouping and groups:
            # One group per test: a test using two of them (none today) goes with the first.
            item.add_marker(pytest.mark.xdist_group(groups[0]))


@pytest.fixture(scope="session")
def pythons_host(ssh_hosts: TestHosts) -> Iterator[PythonsHost]:
    """A far user with two pythons, one with torch (see pythons_host.py), on its own sshd."""
    if not torch_available_here():
        reason = "the two-pythons host needs torch installed for the tests (pip install torch)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI must provide it.", pytrace=False)
        pytest.skip(reason)
    host = PythonsHost(ssh_hosts)
    try:
        host.start()
        yield host
    finally:
        host.close()


@pytest.fixture(scope="session")
def notorch_host(ssh_hosts: TestHosts) -> Iterator[str]:
    """The alias of a GPU host on which no python has torch (see no_torch_host.py)."""
    missing = missing_tools()
    if missing:
        reason = "a host without /opt needs: " + ", ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI must provide them.", pytrace=False)
        pytest.skip(reason)
    with no_torch_host(ssh_hosts) as alias:
        yield alias


@pytest.fixture(scope="session")
def podman_image(ssh_hosts: TestHosts, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The name of an image in the rootless Podman of the plain host's far user, built here
    (no pull) once per session (see container_image.py)."""
    for tool in ("podman", "runc", "busybox"):
        need(tool)
    folder = tmp_path_factory.mktemp("image")
    return import_image(ssh_hosts, GPU_USER, rootfs_tarball(folder))
