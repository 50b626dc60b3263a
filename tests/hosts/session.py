"""The set of SSH hosts one test session owns: start_test_hosts() and TestHosts.

Hosts (all on 127.0.0.1, one host key, so one "machine" behind several doors):
  plain     normal sshd, user rtrain-gpu (fake nvidia-smi with 2 GPUs)
  nogpu     the same sshd, user rtrain-nogpu (no nvidia-smi at all)
  noisy     the same sshd, user rtrain-noisy, whose ~/.bashrc and ~/.profile print to stdout
            and stderr (fake nvidia-smi with 2 GPUs)
  gpuload   the same sshd, user rtrain-gpuload (fake nvidia-smi with 2 GPUs, for telemetry)
  gpushare  the same sshd, user rtrain-gpushare (fake nvidia-smi with 2 GPUs, for GPU claims)
  console   console-only gateway sshd, user rtrain-gpu: PTY shell only, no exec/scp/sftp
  passonly  password-only sshd: key logins are refused
  closed    a port with nothing listening
"""

import os
import pwd
import shutil
import socket
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.hosts.client_config import Alias, ClientConfig
from tests.hosts.sshd import SSHD, Sshd
from tests.hosts.user_accounts import (
    GPU_USER,
    GPULOAD_USER,
    GPUSHARE_USER,
    NOGPU_USER,
    NOISY_USER,
    authorize_key,
    console_gateway_path,
    ensure_user,
    install_home_files,
    revoke_key,
    session_key_comment,
    write_gpu_count,
)

RUN_AS_TIMEOUT_S = 60.0


class TestHosts:
    """Running test hosts; see the module docstring. Build with start_test_hosts()."""

    __test__ = False  # not a pytest test class despite the name

    def __init__(self, base: Path) -> None:
        self.base = base
        keys = base / "keys"
        self.host_key = keys / "host_ed25519"
        self.user_key = keys / "id_ed25519"
        self.user_public_key = ""
        self._users: dict[str, pwd.struct_passwd] = {}
        self._plain: Sshd | None = None
        self._console: Sshd | None = None
        self._passonly: Sshd | None = None
        self._closed_socket: socket.socket | None = None
        self._client: ClientConfig | None = None
        self._closed = False

    # -- what tests read ---------------------------------------------------------------

    @property
    def config_path(self) -> Path:
        """The ssh config file (`ssh -F`, `RTRAIN_SSH_CONFIG`)."""
        return self._client_config.config_path

    @property
    def known_hosts_path(self) -> Path:
        return self._client_config.known_hosts_path

    @property
    def plain_port(self) -> int:
        return self._server("plain").port

    @property
    def console_port(self) -> int:
        return self._server("console").port

    @property
    def passonly_port(self) -> int:
        return self._server("passonly").port

    @property
    def closed_port(self) -> int:
        assert self._closed_socket is not None
        port: int = self._closed_socket.getsockname()[1]
        return port

    @property
    def plain_log(self) -> Path:
        return self._server("plain").log_path

    @property
    def console_log(self) -> Path:
        return self._server("console").log_path

    @property
    def passonly_log(self) -> Path:
        return self._server("passonly").log_path

    @property
    def aliases(self) -> dict[str, Alias]:
        return self._client_config.aliases

    def home(self, user: str) -> Path:
        return Path(pwd.getpwnam(user).pw_dir)

    def ssh_argv(self, alias: str, *command: str, options: Sequence[str] = ()) -> list[str]:
        """`ssh -F CONFIG [options] ALIAS [command...]` as an argv list."""
        return ["ssh", "-F", str(self.config_path), *options, alias, *command]

    # -- what tests change ---------------------------------------------------------------

    def add_alias(
        self,
        name: str,
        port: int,
        user: str = GPU_USER,
        options: Mapping[str, str] | None = None,
    ) -> None:
        """Add (or replace) a Host alias on 127.0.0.1:port, e.g. for a TcpProxy in front of
        plain; its port is trusted with the same host key."""
        self._client_config.add(Alias(name, port, user, dict(options or {})))

    def set_gpu_count(self, count: int, user: str = GPU_USER) -> None:
        """How many GPUs the fake nvidia-smi reports (0: "No devices were found").
        The file is shared by every session on this machine: restore it when done."""
        write_gpu_count(self.home(user), count)

    def run_as(
        self, user: str, argv: Sequence[str], **options: Any
    ) -> "subprocess.CompletedProcess[str]":
        """Run a local command as `user` (its uid, gid, HOME, cwd = home), capturing text.
        Keyword options go to subprocess.run; `env` entries are added to the user's env."""
        account = pwd.getpwnam(user)
        env = {
            "HOME": account.pw_dir,
            "USER": user,
            "LOGNAME": user,
            "SHELL": account.pw_shell,
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
        }
        env.update(options.pop("env", None) or {})
        settings: dict[str, Any] = {
            "capture_output": True,
            "text": True,
            "timeout": RUN_AS_TIMEOUT_S,
            "cwd": account.pw_dir,
        }
        settings.update(options)
        return subprocess.run(
            list(argv),
            user=account.pw_uid,
            group=account.pw_gid,
            extra_groups=[],
            env=env,
            **settings,
        )

    def stop_plain(self, drop_sessions: bool = False) -> None:
        """Stop the plain sshd's listener (new connections are refused). Open sessions, such as
        a live ControlMaster, survive as after a real sshd restart unless drop_sessions."""
        self._server("plain").stop(drop_sessions=drop_sessions)

    def start_plain(self) -> None:
        """Start the plain sshd again, on the same port."""
        self._server("plain").start()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for server in (self._plain, self._console, self._passonly):
            if server is not None:
                server.close()
        if self._closed_socket is not None:
            self._closed_socket.close()
        if self.user_public_key:
            for account in self._users.values():
                revoke_key(account, self.user_public_key)

    def __enter__(self) -> "TestHosts":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- start-up --------------------------------------------------------------------

    def _start(self) -> None:
        self.host_key.parent.mkdir(parents=True, exist_ok=True)
        _generate_key(self.host_key, "rtrain-test-host")
        _generate_key(self.user_key, session_key_comment())
        self.user_public_key = self.user_key.with_suffix(".pub").read_text().strip()
        host_public_key = " ".join(self.host_key.with_suffix(".pub").read_text().split()[:2])

        for user, with_gpus in (
            (GPU_USER, True),
            (NOGPU_USER, False),
            (NOISY_USER, True),
            (GPULOAD_USER, True),
            (GPUSHARE_USER, True),
        ):
            account = ensure_user(user)
            install_home_files(account, with_gpus=with_gpus, noisy=user == NOISY_USER)
            authorize_key(account, self.user_public_key)
            self._users[user] = account

        users = f"AllowUsers {GPU_USER} {NOGPU_USER} {NOISY_USER} {GPULOAD_USER} {GPUSHARE_USER}"
        self._plain = Sshd(
            "plain",
            self.base,
            self.host_key,
            [
                users,
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "Subsystem sftp internal-sftp",
            ],
        )
        gateway = console_gateway_path(Path(self._users[GPU_USER].pw_dir))
        # No Subsystem line: sftp, and so scp, fail like on the real gateway.
        self._console = Sshd(
            "console",
            self.base,
            self.host_key,
            [
                f"AllowUsers {GPU_USER}",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "DisableForwarding yes",
                f"ForceCommand {gateway}",
            ],
        )
        self._passonly = Sshd(
            "passonly",
            self.base,
            self.host_key,
            [
                users,
                "PubkeyAuthentication no",
                "PasswordAuthentication yes",
                "KbdInteractiveAuthentication no",
            ],
        )
        for server in (self._plain, self._console, self._passonly):
            server.start()

        # Bound but never listening: connections get "Connection refused", and no other
        # process can take the port while the session holds it.
        self._closed_socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._closed_socket.bind(("127.0.0.1", 0))

        self._client = ClientConfig(self.base, self.user_key, host_public_key)
        self.add_alias("plain", self.plain_port, GPU_USER)
        self.add_alias("nogpu", self.plain_port, NOGPU_USER)
        self.add_alias("noisy", self.plain_port, NOISY_USER)
        self.add_alias("gpuload", self.plain_port, GPULOAD_USER)
        self.add_alias("gpushare", self.plain_port, GPUSHARE_USER)
        self.add_alias("console", self.console_port, GPU_USER)
        self.add_alias("passonly", self.passonly_port, GPU_USER)
        self.add_alias("closed", self.closed_port, GPU_USER)

    @property
    def _client_config(self) -> ClientConfig:
        assert self._client is not None, "hosts not started"
        return self._client

    def _server(self, name: str) -> Sshd:
        server = {"plain": self._plain, "console": self._console, "passonly": self._passonly}[name]
        assert server is not None, "hosts not started"
        return server


def start_test_hosts(base: Path) -> TestHosts:
    """Start every test host, keeping all files under `base` (except the users' homes)."""
    hosts = TestHosts(base)
    try:
        hosts._start()
    except BaseException:
        hosts.close()
        raise
    return hosts


def missing_requirements() -> list[str]:
    """What this machine lacks to run the test hosts, in words; empty when nothing."""
    missing = []
    if not os.access(SSHD, os.X_OK):
        missing.append(f"{SSHD} (apt-get install openssh-server)")
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            missing.append(f"{tool} (apt-get install openssh-client)")
    for tool in ("useradd", "usermod"):
        if shutil.which(tool) is None:
            missing.append(f"{tool} (the passwd package)")
    if os.geteuid() != 0:
        missing.append("root (sshd and useradd need it)")
    return missing


def _generate_key(path: Path, comment: str) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
