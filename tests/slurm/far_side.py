"""Run one far-side script on the login node over plain ssh, as the daemon assembles it."""

import shlex
import subprocess
from collections.abc import Sequence

from rtrain.daemon.remote import script
from tests.hosts.slurm_login import SlurmLogin


def run_script(
    login: SlurmLogin, name: str, args: Sequence[str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    line = shlex.join(["sh", "-c", script(name), "rtrain", *args])
    return subprocess.run(
        login.hosts.ssh_argv(login.alias, line),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def rows(output: str, key: str) -> list[list[str]]:
    return [line.split("\t")[1:] for line in output.splitlines() if line.split("\t")[0] == key]
