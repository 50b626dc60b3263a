"""A login node that asks for a second factor: its sshd wants a key AND a password
(`AuthenticationMethods publickey,password`), like the HPC login nodes `rtrain login` is for.

The far user `rtrain-login` (`rtrain-login-gw0`... under pytest-xdist) gets a fresh random
password for the session (`chpasswd`), handed to the test that types it, and `*` again
afterwards, so no known password outlives the test. Sessions on this machine share the user:
a lock file keeps two from setting its password at once. BatchMode ssh gets
`Permission denied (password).` at once.
"""

from __future__ import annotations

import fcntl
import secrets
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.hosts.remote_shell_files import MANAGED_DIR
from tests.hosts.session import TestHosts
from tests.hosts.sshd import Sshd
from tests.hosts.user_accounts import authorize_key, ensure_user, install_home_files, revoke_key
from tests.hosts.worker import worker_user

# One per pytest-xdist worker: each worker sets its own password for the session.
LOGIN_USER = worker_user("rtrain-login")
ALIAS = "loginnode"


@dataclass
class LoginHost:
    alias: str
    user: str
    password: str
    sshd: Sshd

    home: Path


@contextmanager
def login_host(hosts: TestHosts) -> Iterator[LoginHost]:
    account = ensure_user(LOGIN_USER)
    install_home_files(account, with_gpus=True)
    lock_path = Path(account.pw_dir) / MANAGED_DIR / "password.lock"
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        password = secrets.token_urlsafe(18)
        subprocess.run(["chpasswd"], input=f"{LOGIN_USER}:{password}\n", text=True, check=True)
        authorize_key(account, hosts.user_public_key)
        sshd = Sshd(
            "loginnode",
            hosts.base,
            hosts.host_key,
            [
                f"AllowUsers {LOGIN_USER}",
                "PubkeyAuthentication yes",
                "PasswordAuthentication yes",
                "KbdInteractiveAuthentication no",
                "AuthenticationMethods publickey,password",
                "Subsystem sftp internal-sftp",
            ],
        )
        try:
            sshd.start()
            hosts.add_alias(ALIAS, sshd.port, LOGIN_USER)
            yield LoginHost(ALIAS, LOGIN_USER, password, sshd, Path(account.pw_dir))
        finally:
            sshd.close()
            revoke_key(account, hosts.user_public_key)
            subprocess.run(["usermod", "-p", "*", LOGIN_USER], check=True, capture_output=True)
