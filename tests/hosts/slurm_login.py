"""A Slurm login node for the suite: its own sshd and user, whose environment points at the
suite's own cluster (tests/hosts/slurm_cluster.py), reached through the alias `cluster`."""

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.hosts.session import TestHosts
from tests.hosts.slurm_cluster import CLUSTER, SlurmCluster
from tests.hosts.sshd import Sshd
from tests.hosts.user_accounts import (
    authorize_key,
    ensure_user,
    install_home_files,
    revoke_key,
    write_atomically,
)
from tests.hosts.worker import worker_user

SLURM_USER = worker_user("rtrain-slurm")
ALIAS = "cluster"
# First on the login user's PATH: a squeue that notes each call, then runs the real one.
COUNTING_BIN = ".test-hosts/slurm-bin"
SQUEUE_CALLS = ".rtrain-test-squeue-calls"
# Each call is noted as one line: the arguments of the far script that ran squeue (its shell
# is `sh -c SCRIPT rtrain ARGS...`; a $(...) subshell has the same command line).
COUNTING_SQUEUE = (
    "#!/bin/sh\n"
    "xargs -0 -a /proc/$PPID/cmdline sh -c 'shift 4; echo \"$*\"' noted "
    '>>"$HOME/{calls}"\n'
    'exec {squeue} "$@"\n'
)


class SlurmLogin:
    """The running cluster, its login sshd, and the user whose jobs rtrain submits."""

    def __init__(self, hosts: TestHosts, cluster: SlurmCluster, sshd: Sshd, home: Path) -> None:
        self.hosts = hosts
        self.cluster = cluster
        self.sshd = sshd
        self.home = home
        self.alias = ALIAS
        self.user = SLURM_USER

    def squeue_calls(self) -> list[str]:
        """Each time squeue has run on the login node so far: the arguments of the far
        script that ran it (for the monitor's poll, its workdir and run ids)."""
        calls = self.home / SQUEUE_CALLS
        return calls.read_text().splitlines() if calls.exists() else []

    def as_user(self, *argv: str) -> str:
        """Run a Slurm command as the login user (e.g. `scancel` from outside rtrain)."""
        done = self.hosts.run_as(SLURM_USER, list(argv), env=self.cluster.env)
        return done.stdout


@contextmanager
def slurm_login(hosts: TestHosts) -> Iterator[SlurmLogin]:
    # The login user's sbatch must reach slurm.conf and the munge socket: not under the
    # session's private temp dir.
    base = Path(tempfile.mkdtemp(prefix="rtrain-slurm-"))
    base.chmod(0o755)
    cluster = SlurmCluster(base / "cluster")
    account = ensure_user(SLURM_USER)
    install_home_files(account, with_gpus=False)
    authorize_key(account, hosts.user_public_key)
    home = Path(account.pw_dir)
    counting = home / COUNTING_BIN
    counting.mkdir(mode=0o755, parents=True, exist_ok=True)
    write_atomically(
        counting / "squeue",
        COUNTING_SQUEUE.format(calls=SQUEUE_CALLS, squeue=shutil.which("squeue")),
        0o755,
        0,
        0,
    )
    (home / SQUEUE_CALLS).unlink(missing_ok=True)
    path = f"{counting}:/usr/local/bin:/usr/bin:/bin"
    # sshd puts these into every session of the user (PermitUserEnvironment), as a site's
    # login profile would.
    write_atomically(
        home / ".ssh" / "environment",
        "".join(f"{name}={value}\n" for name, value in {**cluster.env, "PATH": path}.items()),
        0o600,
        account.pw_uid,
        account.pw_gid,
    )
    sshd = Sshd(
        "slurm-login",
        hosts.base,
        hosts.host_key,
        [
            f"AllowUsers {SLURM_USER}",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitUserEnvironment yes",
            "Subsystem sftp internal-sftp",
        ],
    )
    try:
        (base / "cluster").mkdir()
        cluster.start()
        # Jobs are accounted to an association, as on any real cluster.
        cluster.command("sacctmgr", "-i", "add", "account", "lab", f"Cluster={CLUSTER}")
        cluster.command("sacctmgr", "-i", "add", "user", SLURM_USER, "Account=lab")
        sshd.start()
        hosts.add_alias(ALIAS, sshd.port, SLURM_USER)
        yield SlurmLogin(hosts, cluster, sshd, home)
    finally:
        sshd.close()
        cluster.close()
        revoke_key(account, hosts.user_public_key)
        _remove_tree(base)


def _remove_tree(base: Path) -> None:
    for root, dirs, files in os.walk(base, topdown=False):
        for name in files:
            Path(root, name).unlink(missing_ok=True)
        for name in dirs:
            path = Path(root, name)
            if path.is_symlink() or not path.is_dir():
                path.unlink(missing_ok=True)
            else:
                path.rmdir()
    base.rmdir()
