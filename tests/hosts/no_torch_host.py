"""A GPU host with no torch anywhere: a far user with the fake nvidia-smi (2 GPUs) whose sshd
runs in a mount namespace of its own where /opt is empty.

This machine keeps the suite's torch venv under /opt (tests/torch_python.py), where
preflight rightly looks for pythons; hiding /opt from this sshd's sessions alone makes a
host like a fresh GPU image, on which no interpreter has torch, without touching what the
other far users see. Needs `unshare` (util-linux) and root, as the other hosts do.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager

from tests.hosts.session import TestHosts
from tests.hosts.sshd import Sshd
from tests.hosts.user_accounts import authorize_key, ensure_user, install_home_files, revoke_key
from tests.hosts.worker import worker_user

NO_TORCH_USER = worker_user("rtrain-notorch")
ALIAS = "notorch"
# sshd runs as the last word of the shell command, in the namespace the mount made.
HIDE_OPT = [
    "unshare",
    "--mount",
    "--propagation",
    "private",
    "--",
    "sh",
    "-c",
    'mount -t tmpfs -o size=1m,mode=0755 rtrain-empty-opt /opt && exec "$@"',
    "sshd-without-opt",
]


def missing_tools() -> list[str]:
    return [tool for tool in ("unshare", "mount") if shutil.which(tool) is None]


@contextmanager
def no_torch_host(hosts: TestHosts) -> Iterator[str]:
    """The alias of the host, for as long as the context lasts."""
    account = ensure_user(NO_TORCH_USER)
    install_home_files(account, with_gpus=True)
    authorize_key(account, hosts.user_public_key)
    sshd = Sshd(
        "notorch",
        hosts.base,
        hosts.host_key,
        [f"AllowUsers {NO_TORCH_USER}", "PasswordAuthentication no"],
        launcher=HIDE_OPT,
    )
    try:
        sshd.start()
        hosts.add_alias(ALIAS, sshd.port, NO_TORCH_USER)
        yield ALIAS
    finally:
        sshd.close()
        revoke_key(account, hosts.user_public_key)
