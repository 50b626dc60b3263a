"""The suite's own SSH hosts behave like the hosts rtrain will meet, seen through real `ssh`."""

import os
import re
import select
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.hosts import GPU_USER, NOGPU_USER, TcpProxy, TestHosts
from tests.hosts.remote_shell_files import MANAGED_DIR, PTY_REFUSAL
from tests.hosts.user_accounts import write_gpu_count

# Only to stop a broken test from hanging; nothing here should come close.
TIMEOUT_S = 20.0
GPU_QUERY = "nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader,nounits"


def ssh(
    hosts: TestHosts,
    alias: str,
    *command: str,
    options: Sequence[str] = (),
    input: str | None = None,
) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(
        hosts.ssh_argv(alias, *command, options=["-o", "BatchMode=yes", *options]),
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


class LiveSsh:
    """An ssh session left running, its stdout read line by line with a deadline."""

    def __init__(self, argv: list[str]) -> None:
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
        )
        self._pending = b""

    def send(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode())
        self.process.stdin.flush()

    def read_line(self, timeout_s: float = TIMEOUT_S) -> str | None:
        """The next stdout line, or None if none arrived in time or stdout closed."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            readable, _, _ = select.select([self.process.stdout], [], [], left)
            if not readable:
                return None
            chunk = os.read(self.process.stdout.fileno(), 4096)
            if not chunk:
                return None
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return line.decode()

    def wait(self) -> int:
        return self.process.wait(timeout=TIMEOUT_S)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate(timeout=TIMEOUT_S)


@pytest.fixture
def live_sessions() -> Iterator[list[LiveSsh]]:
    sessions: list[LiveSsh] = []
    yield sessions
    for session in sessions:
        session.close()


def start_live(sessions: list[LiveSsh], hosts: TestHosts, alias: str, command: str) -> LiveSsh:
    session = LiveSsh(hosts.ssh_argv(alias, command, options=["-o", "BatchMode=yes"]))
    sessions.append(session)
    return session


# -- plain host ------------------------------------------------------------------------


def test_plain_runs_commands_as_the_gpu_user(ssh_hosts: TestHosts) -> None:
    result = ssh(ssh_hosts, "plain", "whoami; exit 3")
    assert result.stdout == f"{GPU_USER}\n"
    assert result.returncode == 3


def test_plain_reports_two_fake_gpus_to_a_non_interactive_command(ssh_hosts: TestHosts) -> None:
    result = ssh(ssh_hosts, "plain", GPU_QUERY)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ("0, NVIDIA H100 80GB HBM3, 81559\n1, NVIDIA H100 80GB HBM3, 81559\n")


def test_fake_nvidia_smi_refuses_unsupported_arguments(ssh_hosts: TestHosts) -> None:
    bad_flag = ssh(ssh_hosts, "plain", "nvidia-smi --no-such-flag")
    assert bad_flag.returncode == 2
    assert "Invalid combination of input arguments" in bad_flag.stdout
    bad_field = ssh(ssh_hosts, "plain", "nvidia-smi --query-gpu=colour --format=csv")
    assert bad_field.returncode == 2
    assert 'Field "colour" is not a valid field to query.' in bad_field.stdout


def test_fake_gpu_count_comes_from_a_file_in_home(ssh_hosts: TestHosts, tmp_path: Path) -> None:
    # The real count file is shared with other sessions on this machine, so the installed
    # script is run here against a private HOME holding its own count file.
    fake = ssh_hosts.home(GPU_USER) / MANAGED_DIR / "bin" / "nvidia-smi"
    argv = [str(fake), *GPU_QUERY.split()[1:]]

    def run_with(count: int) -> "subprocess.CompletedProcess[str]":
        write_gpu_count(tmp_path, count)
        return subprocess.run(
            argv,
            env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )

    (tmp_path / MANAGED_DIR).mkdir()
    assert run_with(1).stdout == "0, NVIDIA H100 80GB HBM3, 81559\n"
    assert len(run_with(8).stdout.splitlines()) == 8
    none = run_with(0)
    assert none.returncode == 6
    assert none.stdout == "No devices were found\n"


def test_nogpu_user_has_no_nvidia_smi(ssh_hosts: TestHosts) -> None:
    result = ssh(ssh_hosts, "nogpu", "whoami; nvidia-smi")
    assert result.stdout == f"{NOGPU_USER}\n"
    assert result.returncode == 127
    assert "nvidia-smi: command not found" in result.stderr


def test_plain_serves_sftp(ssh_hosts: TestHosts) -> None:
    result = subprocess.run(
        ["sftp", "-F", str(ssh_hosts.config_path), "-b", "-", "plain"],
        input="pwd\n",
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr
    assert str(ssh_hosts.home(GPU_USER)) in result.stdout


def test_host_key_checking_stays_on(ssh_hosts: TestHosts, tmp_path: Path) -> None:
    empty_known_hosts = tmp_path / "known_hosts"
    empty_known_hosts.touch()
    trusting_nothing = ["-o", f"UserKnownHostsFile={empty_known_hosts}"]
    result = ssh(ssh_hosts, "plain", "true", options=trusting_nothing)
    assert result.returncode == 255
    assert "Host key verification failed" in result.stderr


# -- console-only gateway ----------------------------------------------------------------


def test_console_refuses_exec(ssh_hosts: TestHosts) -> None:
    result = ssh(ssh_hosts, "console", "true")
    assert result.returncode == 1
    assert PTY_REFUSAL in result.stderr


def test_console_refuses_a_shell_without_a_tty(ssh_hosts: TestHosts) -> None:
    result = ssh(ssh_hosts, "console", options=["-T"], input="echo hi\n")
    assert result.returncode == 1
    assert PTY_REFUSAL in result.stderr
    assert "hi" not in result.stdout


@pytest.mark.parametrize(
    "tool",
    [["sftp", "-b", "-"], ["scp"], ["scp", "-O"]],
    ids=["sftp", "scp", "scp-legacy"],
)
def test_console_has_no_file_transfer(
    ssh_hosts: TestHosts, tmp_path: Path, tool: list[str]
) -> None:
    local = tmp_path / "payload.txt"
    local.write_text("data\n")
    program, *flags = tool
    argv = [program, *flags, "-F", str(ssh_hosts.config_path)]
    if program == "sftp":
        argv += ["console"]
    else:
        argv += [str(local), "console:payload.txt"]
    result = subprocess.run(
        argv, input="put payload.txt\n", capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert result.returncode != 0
    assert not (ssh_hosts.home(GPU_USER) / "payload.txt").exists()


def test_console_serves_a_noisy_pty_shell(ssh_hosts: TestHosts) -> None:
    result = subprocess.run(
        ssh_hosts.ssh_argv("console", options=["-tt", "-o", "BatchMode=yes"]),
        input=b"echo hi; exit\n",
        capture_output=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    plain_text = re.sub(rb"\x1b\][^\x07]*\x07|\x1b\[[0-9;?]*[A-Za-z]|\r", b"", out)
    assert b"\nhi\n" in plain_text
    assert out.count(b"echo hi; exit") >= 1  # the PTY echoes what was typed
    assert b"\x1b]0;" in out  # window-title escape from the prompt
    assert b"\x1b[01;32m" in out  # colours
    assert b"\x1b[?2004h" in out  # bracketed paste switched on


# -- hosts that refuse -------------------------------------------------------------------


def test_passonly_refuses_a_key_without_prompting(ssh_hosts: TestHosts) -> None:
    result = ssh(ssh_hosts, "passonly", "true")
    assert result.returncode == 255
    assert "Permission denied" in result.stderr
    assert "password:" not in result.stderr.lower()


def test_closed_port_refuses_connections(ssh_hosts: TestHosts) -> None:
    result = ssh(ssh_hosts, "closed", "true")
    assert result.returncode == 255
    assert "Connection refused" in result.stderr


# -- local helpers -----------------------------------------------------------------------


def test_run_as_runs_a_local_command_as_the_user(ssh_hosts: TestHosts) -> None:
    result = ssh_hosts.run_as(NOGPU_USER, ["sh", "-c", 'id -un; echo "$HOME"; pwd'])
    home = str(ssh_hosts.home(NOGPU_USER))
    assert result.stdout.splitlines() == [NOGPU_USER, home, home]


def test_sshd_restart_keeps_a_live_session(
    ssh_hosts: TestHosts, live_sessions: list[LiveSsh]
) -> None:
    session = start_live(live_sessions, ssh_hosts, "plain", "echo ready; read line; echo got $line")
    assert session.read_line() == "ready"
    ssh_hosts.stop_plain()
    try:
        refused = ssh(ssh_hosts, "plain", "true")
        assert "Connection refused" in refused.stderr
        session.send("still-here\n")
        assert session.read_line() == "got still-here"
    finally:
        ssh_hosts.start_plain()
    assert ssh(ssh_hosts, "plain", "whoami").stdout == f"{GPU_USER}\n"


# -- WAN proxy ---------------------------------------------------------------------------


@pytest.fixture
def wan_alias(ssh_hosts: TestHosts) -> Iterator[tuple[str, TcpProxy]]:
    """An alias reaching the plain host through a 50 ms one-way delay."""
    with TcpProxy(ssh_hosts.plain_port, delay_s=0.05) as proxy:
        ssh_hosts.add_alias("plain-wan", proxy.port)
        yield "plain-wan", proxy


def test_proxy_carries_ssh_end_to_end(
    ssh_hosts: TestHosts, wan_alias: tuple[str, TcpProxy]
) -> None:
    alias, _ = wan_alias
    result = ssh(ssh_hosts, alias, GPU_QUERY)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 2


def test_proxy_cut_breaks_a_live_ssh_session(
    ssh_hosts: TestHosts, wan_alias: tuple[str, TcpProxy], live_sessions: list[LiveSsh]
) -> None:
    alias, proxy = wan_alias
    session = start_live(live_sessions, ssh_hosts, alias, "echo ready; sleep 60")
    assert session.read_line() == "ready"
    proxy.cut()
    assert session.wait() == 255
    # The link itself is not gone: a new connection goes through.
    assert ssh(ssh_hosts, alias, "true").returncode == 0


def test_proxy_stall_holds_traffic_until_resume(
    ssh_hosts: TestHosts, wan_alias: tuple[str, TcpProxy], live_sessions: list[LiveSsh]
) -> None:
    alias, proxy = wan_alias
    session = start_live(live_sessions, ssh_hosts, alias, "echo ready; read line; echo got $line")
    assert session.read_line() == "ready"
    proxy.stall()
    session.send("late\n")
    # Nothing can cross a stalled link, so this waits out its short window.
    assert session.read_line(timeout_s=0.5) is None
    assert session.process.poll() is None
    proxy.resume()
    assert session.read_line() == "got late"


def test_proxy_keeps_bytes_in_order_both_ways() -> None:
    """Without ssh: a local echo server behind the proxy returns exactly what was sent."""
    with socket.create_server(("127.0.0.1", 0)) as server:

        def echo_once() -> None:
            peer, _ = server.accept()
            with peer:
                while data := peer.recv(65536):
                    peer.sendall(data)

        echo = threading.Thread(target=echo_once)
        echo.start()
        with TcpProxy(server.getsockname()[1], delay_s=0.01) as proxy:
            payload = bytes(range(256)) * 2048
            with socket.create_connection(("127.0.0.1", proxy.port), timeout=TIMEOUT_S) as client:
                sender = threading.Thread(target=client.sendall, args=(payload,))
                sender.start()
                received = b""
                while len(received) < len(payload):
                    chunk = client.recv(65536)
                    if not chunk:
                        break
                    received += chunk
                sender.join(TIMEOUT_S)
                client.shutdown(socket.SHUT_WR)
                assert client.recv(1) == b""  # the half-close travelled both ways
        echo.join(TIMEOUT_S)
    assert received == payload
