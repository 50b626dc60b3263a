"""Commands over the console gateway behave exactly as over an exec channel."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from rtrain.daemon.remote.contract.answers import Lines
from rtrain.daemon.ssh import console_session
from rtrain.daemon.ssh.console_framing import Request
from rtrain.daemon.ssh.console_transport import ConsoleTransport
from rtrain.daemon.ssh.exec_transport import ExecTransport
from rtrain.daemon.transports.transport import Completed
from rtrain.protocol.errors import Kind, RpcError
from tests.console.conftest import Consoles, Far
from tests.hosts import GPU_USER, TestHosts
from tests.hosts.sshd import Sshd
from tests.hosts.user_accounts import console_gateway_path

# Prints its arguments one per line (NUL-free, any bytes), its stdin, a line on stderr,
# and exits with the status given as the first argument.
ECHO_SCRIPT = """
code=$1
shift
for word in "$@"; do printf '<%s>\\n' "$word"; done
echo "stdin:"
cat
echo "to stderr: $#" >&2
printf 'cwd=%s\\n' "$PWD"
exit "$code"
"""
STRANGE_ARGS = [
    "7",
    "two words",
    "it's",
    'a "quote"',
    "$HOME `id` $(id) ;|&",
    "line\nbreak",
    "tab\there",
    "données ✓",
    "",
    "-n",
    "~",
]


def over_exec_channel(hosts: TestHosts, text: str, args: list[str], stdin: bytes) -> Completed:
    """What the exec transport does: `sh -c TEXT rtrain ARGS` through ssh."""
    command = shlex.join(["sh", "-c", text, "rtrain", *args])
    done = subprocess.run(
        hosts.ssh_argv("plain", command, options=["-o", "BatchMode=yes"]),
        input=stdin,
        capture_output=True,
        timeout=30,
    )
    return Completed(done.returncode, done.stdout, done.stderr)


def test_output_error_and_exit_status_are_those_of_an_exec_channel(
    console: Consoles, ssh_hosts: TestHosts
) -> None:
    stdin = bytes(range(256)) + b"\r\n\x03\x04\x1b[0m no newline at the end"

    async def body(transport: ConsoleTransport) -> Completed:
        return await transport.execute(
            Request.of(ECHO_SCRIPT, STRANGE_ARGS, stdin), 30, "echo", idempotent=False
        )

    got = console.run(body)
    expected = over_exec_channel(ssh_hosts, ECHO_SCRIPT, STRANGE_ARGS, stdin)
    assert expected.returncode == 7
    assert got == expected
    assert f"cwd={ssh_hosts.home(GPU_USER)}".encode() in got.stdout


def test_far_side_scripts_answer_as_over_exec(
    console: Consoles, ssh_hosts: TestHosts, far: Far
) -> None:
    async def on_console(transport: ConsoleTransport) -> list[Completed]:
        return [
            await transport.run("prepare", [far.tilde, "run-a"]),
            await transport.run("prepare", [far.tilde, "run-a"]),  # exists: exit 17
            await transport.run("status", [far.tilde, "run-a", "no-such-run"]),
            await transport.run("prepare", [far.tilde]),  # usage error
        ]

    first, again, status, usage = console.run(on_console)
    assert first.returncode == 0
    assert Lines(first.stdout).last("run_dir") == [str(far.path / "run-a")]
    assert again.returncode == 17 and b"already exists" in again.stderr

    async def on_exec(transport: ExecTransport) -> list[Completed]:
        return [
            await transport.run("prepare", [far.tilde, "run-a"]),
            await transport.run("status", [far.tilde, "run-a", "no-such-run"]),
            await transport.run("prepare", [far.tilde]),
        ]

    assert console.run_exec(on_exec) == [again, status, usage]


def test_large_output_arrives_whole(console: Consoles) -> None:
    script = 'head -c 3000000 /dev/zero | tr "\\0" "x"; printf "%s" end'

    async def body(transport: ConsoleTransport) -> Completed:
        return await transport.execute(Request.of(script, [], None), 60, "big", idempotent=False)

    done = console.run(body)
    assert done.stdout == b"x" * 3_000_000 + b"end"


def test_a_command_that_outlives_its_timeout_is_stopped_and_the_console_replaced(
    console: Consoles, far: Far, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(console_session, "PROBE", 0.5)
    script = 'echo $$ >"$1"; exec sleep 60'
    pid_file = far.path / "sleeper.pid"

    async def body(transport: ConsoleTransport) -> tuple[RpcError, Completed, int]:
        with pytest.raises(RpcError) as caught:
            await transport.execute(
                Request.of(script, [f"{far.tilde[2:]}/sleeper.pid"], None),
                1.5,
                "sleeper",
                idempotent=False,
            )
        pid = int(pid_file.read_text())
        after = await transport.run("status", [far.tilde, "none"])
        return caught.value, after, pid

    error, after, pid = console.run(body)
    assert error.kind == Kind.TIMEOUT
    assert "sleeper took longer than 2 s" in error.message
    assert after.returncode == 0 and Lines(after.stdout).rows("run")
    # The console's shell hung up, and the command with it.
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists()


def test_a_console_whose_ssh_died_is_reopened_on_next_use(console: Consoles, far: Far) -> None:
    async def body(transport: ConsoleTransport) -> Completed:
        await transport.connect()
        [session] = list(transport._sessions)
        assert session.pid is not None
        os.killpg(session.pid, signal.SIGKILL)
        return await transport.run("prepare", [far.tilde, "after-kill"])

    done = console.run(body)
    assert done.returncode == 0
    assert (far.path / "after-kill").is_dir()


def test_commands_run_side_by_side_on_separate_consoles(console: Consoles) -> None:
    script = 'sleep 1; echo "$1"'

    async def body(transport: ConsoleTransport) -> list[Completed]:
        await transport.connect()
        results = await asyncio.gather(
            *(
                transport.execute(Request.of(script, [str(i)], None), 30, "s", idempotent=False)
                for i in range(3)
            )
        )
        return list(results)

    results = console.run(body)
    assert [r.stdout for r in results] == [b"0\n", b"1\n", b"2\n"]


def test_an_unreachable_console_host_says_so(console: Consoles, ssh_hosts: TestHosts) -> None:
    ssh_hosts.add_alias("console-closed", ssh_hosts.closed_port)

    async def body(transport: ConsoleTransport) -> None:
        await transport.connect()

    with pytest.raises(RpcError) as caught:
        console.run(body, alias="console-closed")
    assert caught.value.kind == Kind.HOST_UNREACHABLE


def test_a_gateway_that_allows_one_console_per_connection_has_it_shared(
    console: Consoles, ssh_hosts: TestHosts, tmp_path: Path
) -> None:
    # Past the first console the master is refused (MaxSessions 1); the commands then take
    # turns on the one console there is, each run exactly once.
    gateway = Sshd(
        "one-console",
        tmp_path,
        ssh_hosts.host_key,
        [
            f"AllowUsers {GPU_USER}",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "DisableForwarding yes",
            "MaxSessions 1",
            f"ForceCommand {console_gateway_path(ssh_hosts.home(GPU_USER))}",
        ],
    )
    gateway.start()
    try:
        ssh_hosts.add_alias("one-console", gateway.port)
        script = 'sleep 0.5; echo "$1"'

        async def body(transport: ConsoleTransport) -> tuple[list[Completed], int]:
            results = await asyncio.gather(
                *(
                    transport.execute(Request.of(script, [str(i)], None), 30, "s", idempotent=False)
                    for i in range(3)
                )
            )
            return list(results), len(transport._sessions)

        results, consoles = console.run(body, alias="one-console")
    finally:
        gateway.close()
    assert [r.stdout for r in results] == [b"0\n", b"1\n", b"2\n"]
    assert consoles == 1
