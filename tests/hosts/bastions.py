"""Bastions: two sshds of their own in front of the suite's hosts, reached with `ProxyJump`.

A bastion here is what a site's jump host is: the far user may forward TCP through it
(`AllowTcpForwarding yes`) and nothing else: no tty, no command of its own (every session
gets a fixed greeting), no sftp. So whatever reaches a host behind it went through the
tunnel, never through a shell on the bastion.

Aliases (the test hosts' ssh config):
  jump1           bastion one (user rtrain-gpu)
  jump2           bastion two, reached through jump1
  behind1         the plain host through jump1 (one hop)
  behind2         the plain host through jump1, then jump2 (a chain of two hops)
  behindcommand   the plain host through `ProxyCommand ssh -W %h:%p jump1`
  consolebehind   the console-only gateway through jump1

`drop_sessions(n)` kills the connections bastion n serves (its per-connection sshd
processes); its listener stays, so the next connection gets through again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.hosts.session import TestHosts
from tests.hosts.sshd import Sshd, _terminate, session_processes
from tests.hosts.user_accounts import GPU_USER

BASTION_SETTINGS = [
    f"AllowUsers {GPU_USER}",
    "PasswordAuthentication no",
    "KbdInteractiveAuthentication no",
    "AllowTcpForwarding yes",
    "PermitTTY no",
    "ForceCommand echo this is a bastion",
]


@dataclass
class Bastions:
    first: Sshd
    second: Sshd

    def sshd(self, number: int) -> Sshd:
        return self.first if number == 1 else self.second

    def log_text(self, number: int) -> str:
        return self.sshd(number).log_path.read_text(errors="replace")

    def drop_sessions(self, number: int) -> None:
        server = self.sshd(number)
        assert server._process is not None, "bastion not running"
        _terminate(session_processes(server._process.pid))


@contextmanager
def bastions(hosts: TestHosts) -> Iterator[Bastions]:
    first = Sshd("bastion1", hosts.base, hosts.host_key, BASTION_SETTINGS)
    second = Sshd("bastion2", hosts.base, hosts.host_key, BASTION_SETTINGS)
    try:
        first.start()
        second.start()
        hosts.add_alias("jump1", first.port, GPU_USER)
        hosts.add_alias("jump2", second.port, GPU_USER, {"ProxyJump": "jump1"})
        hosts.add_alias("behind1", hosts.plain_port, GPU_USER, {"ProxyJump": "jump1"})
        hosts.add_alias("behind2", hosts.plain_port, GPU_USER, {"ProxyJump": "jump2"})
        command = f"ssh -F {hosts.config_path} -W %h:%p jump1"
        hosts.add_alias("behindcommand", hosts.plain_port, GPU_USER, {"ProxyCommand": command})
        hosts.add_alias("consolebehind", hosts.console_port, GPU_USER, {"ProxyJump": "jump1"})
        yield Bastions(first, second)
    finally:
        first.close()
        second.close()


def sshd_log_size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0
