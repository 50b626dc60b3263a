"""Three GPU hosts for pools (tests/pools/): each its own sshd on its own port and its own
far user, with a fake nvidia-smi of its own GPU count, and on `box2` GPU 0 computing for a
process that is no rtrain run (someone else's job), for as long as the session lasts.

| alias  | GPUs | free for a run                    |
|--------|------|-----------------------------------|
| `box1` | 1    | GPU 0                             |
| `box2` | 2    | GPU 1 (GPU 0 busy: 20 GB in use)  |
| `box3` | 2    | GPU 0, GPU 1                      |
"""

from __future__ import annotations

import pwd
import subprocess
from pathlib import Path

from tests.hosts.session import TestHosts
from tests.hosts.sshd import Sshd
from tests.hosts.user_accounts import (
    authorize_key,
    ensure_user,
    install_home_files,
    revoke_key,
    write_gpu_count,
)
from tests.hosts.worker import worker_user

POOL_GPUS = {"box1": 1, "box2": 2, "box3": 2}
# Someone else's job on box2: GPU 0 at 90 %, 20000 MiB (fake_nvidia_smi.py reads this).
FOREIGN_LOAD = "0:90:20000"


class PoolHosts:
    """The three hosts, started once a session; `user(alias)` and `home(alias)` name the far
    side of each."""

    def __init__(self, hosts: TestHosts) -> None:
        self.hosts = hosts
        self.users = {alias: worker_user(f"rtrain-{alias}") for alias in POOL_GPUS}
        self._sshds: list[Sshd] = []
        self._foreign: subprocess.Popen[bytes] | None = None

    def user(self, alias: str) -> str:
        return self.users[alias]

    def home(self, alias: str) -> Path:
        return self.hosts.home(self.users[alias])

    def start(self) -> None:
        for alias, gpus in POOL_GPUS.items():
            account = ensure_user(self.users[alias])
            install_home_files(account, with_gpus=True)
            write_gpu_count(Path(account.pw_dir), gpus)
            authorize_key(account, self.hosts.user_public_key)
            sshd = Sshd(
                f"pool-{alias}",
                self.hosts.base,
                self.hosts.host_key,
                [
                    f"AllowUsers {self.users[alias]}",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "Subsystem sftp internal-sftp",
                ],
            )
            sshd.start()
            self._sshds.append(sshd)
            self.hosts.add_alias(alias, sshd.port, self.users[alias])
        self._foreign = subprocess.Popen(
            ["sleep", "86400"],
            user=self.users["box2"],
            group=self.users["box2"],
            env={"PATH": "/usr/bin:/bin", "RTRAIN_FAKE_GPU_LOAD": FOREIGN_LOAD},
            cwd="/",
        )

    def close(self) -> None:
        if self._foreign is not None:
            self._foreign.kill()
            self._foreign.wait()
        for sshd in self._sshds:
            sshd.close()
        for alias in POOL_GPUS:
            try:
                revoke_key(pwd.getpwnam(self.users[alias]), self.hosts.user_public_key)
            except KeyError:
                pass
