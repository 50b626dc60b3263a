"""The long-lived far-side shells that carry scripts over one round trip, against the real sshd.

Whatever travels through a shell must come back exactly as it would on a channel of its own:
every byte of stdout and stderr, the exit status, every argument untouched, and nothing a
script does may leak into the next one.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from rtrain.daemon.ssh.command_shell import OUTPUT_LIMIT, CommandShell, ShellLost
from rtrain.daemon.ssh.exec_transport import ExecTransport
from rtrain.daemon.transfer import whole_file
from rtrain.daemon.transports.transport import Completed, ProcessTransport
from rtrain.protocol.errors import Kind, RpcError
from tests.hosts import GPU_USER, TestHosts
from tests.hosts.sshd import Sshd
from tests.run_mark import RUN_MARK

T = TypeVar("T")
IN_CI = os.environ.get("CI", "").lower() == "true"


def far_shells() -> list[str]:
    """The far shell that reads the scripts: /bin/sh always, others where installed."""
    found = ["sh"]
    for name, command in (("bash", "bash"), ("busybox", "busybox sh"), ("zsh", "zsh")):
        if shutil.which(name):
            found.append(command)
        elif IN_CI:
            found.append(command)  # CI installs them; a missing one must fail there
    return found


@pytest.fixture
def runtime() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="rtcs-", dir="/tmp"))  # short: a socket lives here
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def on_plain(hosts: TestHosts, runtime: Path, body: Callable[[ExecTransport], Awaitable[T]]) -> T:
    async def main() -> T:
        transport = ExecTransport("plain", runtime, hosts.config_path)
        try:
            await transport.connect()
            return await body(transport)
        finally:
            await transport.close()

    return asyncio.run(main())


async def open_shell(transport: ExecTransport, far_shell: str = "sh") -> CommandShell:
    return await CommandShell.open(transport.master.command_argv(f"exec {far_shell}"))


async def pooled_shell(transport: ExecTransport) -> tuple[CommandShell, int]:
    """A shell of the transport's pool (taken: give it back) and its far `sh`'s pid."""
    await warm(transport)
    shell = transport.shells.take()
    assert shell is not None
    return shell, int((await shell.run('printf "%s" "$PPID"', [], 30)).stdout)


def has_children(pid: int) -> bool:
    """Whether the far shell `pid` runs a script now (it has a child process)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended between the listing and the read
        if int(fields[1]) == pid:
            return True
    return False


async def until(what: str, check: Callable[[], bool], timeout: float = 30.0) -> None:
    """Waits for an event, not for a time: `check` polled until it holds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def warm(transport: ExecTransport) -> None:
    """Run scripts until one went through a shell (the first only opens one)."""
    for _ in range(200):
        shell = transport.shells.take()
        if shell is not None:
            transport.shells.give_back(shell)
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no shell opened")


STRANGE_ARGS = ["", "two words", "$(touch pwned)", "`id`", "a'b\"c", "x\ny", "; exit 7", "*", "-e"]


@pytest.mark.parametrize("far_shell", far_shells())
def test_output_status_and_arguments_come_back_exactly(
    ssh_hosts: TestHosts, runtime: Path, far_shell: str
) -> None:
    script = r"""
for a in "$@"; do printf '<%s>' "$a"; done
printf '\000binary\377'
printf 'to stderr\n' >&2
printf 'no newline at the end' >&2
printf '\nrtrain-end-0000 0\n'
exit 3
"""

    async def body(transport: ExecTransport) -> tuple[Completed, Completed]:
        shell = await open_shell(transport, far_shell)
        try:
            first = await shell.run(script, STRANGE_ARGS, 30)
            second = await shell.run("printf '%s' \"$#\"", [], 30)
            return first, second
        finally:
            await shell.close()

    first, second = on_plain(ssh_hosts, runtime, body)
    expected = "".join(f"<{a}>" for a in STRANGE_ARGS).encode()
    assert first.stdout == expected + b"\0binary\xff\nrtrain-end-0000 0\n"
    assert first.stderr == b"to stderr\nno newline at the end"
    assert first.returncode == 3
    assert second == Completed(0, b"0", b"")
    assert not (ssh_hosts.home(GPU_USER) / "pwned").exists()


@pytest.mark.parametrize("far_shell", far_shells())
def test_lines_of_stdin_reach_a_script_through_a_shell_exactly(
    ssh_hosts: TestHosts, runtime: Path, far_shell: str
) -> None:
    # What a start's list of inputs may hold: names no shell may expand or cut short.
    lines = [f"{n}\t{word}" for n, word in enumerate(STRANGE_ARGS) if "\n" not in word]
    lines += ["EOF", "'EOF'", "\\", "  spaces  ", "\t", "rtrain-0000-in", "é ü 日本"]
    data = ("\n".join(lines) + "\n").encode() * 2000

    async def body(transport: ExecTransport) -> tuple[Completed, Completed]:
        shell = await open_shell(transport, far_shell)
        try:
            first = await shell.run("cat; printf done >&2", [], 30, data)
            second = await shell.run('cat; printf "%s" "$#"', ["x"], 30)
            return first, second
        finally:
            await shell.close()

    first, second = on_plain(ssh_hosts, runtime, body)
    assert first == Completed(0, data, b"done")
    # The next script reads no leftover of it: its stdin is empty.
    assert second == Completed(0, b"1", b"")


def test_a_script_changes_nothing_for_the_next_one(ssh_hosts: TestHosts, runtime: Path) -> None:
    async def body(transport: ExecTransport) -> list[Completed]:
        shell = await open_shell(transport)
        try:
            results = [
                await shell.run(
                    "cd /; export RTRAIN_LEAK=1; set -e; exec 2>/dev/null; cat; exit 9", [], 30
                )
            ]
            for text in ('printf "%s|%s" "$PWD" "${RTRAIN_LEAK-unset}"', "false; echo $?"):
                results.append(await shell.run(text, [], 30))
            return results
        finally:
            await shell.close()

    ended, where, errexit = on_plain(ssh_hosts, runtime, body)
    # `cat` read an empty stdin: a script never eats the stream that carries the next.
    assert ended == Completed(9, b"", b"")
    assert where.stdout.decode() == f"{ssh_hosts.home(GPU_USER)}|unset"
    assert errexit.stdout == b"1\n"


def test_chatter_before_the_shell_is_not_taken_for_output(
    ssh_hosts: TestHosts, runtime: Path
) -> None:
    async def body(transport: ExecTransport) -> Completed:
        argv = transport.master.command_argv("echo Welcome to the pod; echo oops >&2; exec sh")
        shell = await CommandShell.open(argv)
        try:
            return await shell.run("echo hello", [], 30)
        finally:
            await shell.close()

    assert on_plain(ssh_hosts, runtime, body) == Completed(0, b"hello\n", b"")


def test_output_a_straggler_printed_between_scripts_is_not_taken_for_an_answer(
    ssh_hosts: TestHosts, runtime: Path
) -> None:
    spoke = ssh_hosts.home(GPU_USER) / f"rtcs-spoke-{uuid.uuid4().hex[:8]}"

    async def body(transport: ExecTransport) -> tuple[Completed, Completed]:
        shell = await open_shell(transport)
        try:
            # A background process that keeps the shell's stdout and stderr and speaks
            # later; once `spoke` exists its words are in the pipes, ahead of the next script.
            first = await shell.run(
                '(sleep 0.3; echo late; echo late >&2; : >"$1") & echo first', [str(spoke)], 30
            )
            for _ in range(200):
                if spoke.exists():
                    break
                await asyncio.sleep(0.05)
            assert spoke.exists(), "the straggler never spoke"
            return first, await shell.run("echo second", [], 30)
        finally:
            await shell.close()

    try:
        first, second = on_plain(ssh_hosts, runtime, body)
    finally:
        spoke.unlink(missing_ok=True)
    assert first == Completed(0, b"first\n", b"")
    assert second == Completed(0, b"second\n", b"")


def test_a_script_that_prints_too_much_loses_its_shell_not_the_daemon(
    ssh_hosts: TestHosts, runtime: Path
) -> None:
    async def body(transport: ExecTransport) -> tuple[ShellLost, RpcError]:
        shell = await open_shell(transport)
        with pytest.raises(ShellLost) as lost:
            await shell.run(f"head -c {OUTPUT_LIMIT + 1} /dev/zero", [], 60)
        assert not shell.usable
        failure = await transport._shell_failure("list_files", lost.value, shell.generation)
        return lost.value, failure

    lost, failure = on_plain(ssh_hosts, runtime, body)
    assert lost.overflowed
    assert failure.kind == Kind.REMOTE_FAILED
    assert "list_files printed more than 64 MiB" in failure.message


def test_a_repeatable_script_whose_shell_is_killed_runs_again_on_its_own_channel(
    ssh_hosts: TestHosts, runtime: Path
) -> None:
    """status is safe to run twice: losing its shell costs time, not an error."""
    # Every far `sh -c` now waits a second first, so the shell can be killed mid-script.
    slow_sh = ssh_hosts.home(GPU_USER) / ".test-hosts" / "bin" / "sh"
    slow_sh.write_text('#!/bin/sh\n[ "$1" = -c ] && sleep 1\nexec /bin/sh "$@"\n')
    slow_sh.chmod(0o755)

    async def body(transport: ExecTransport) -> Completed:
        shell, pid = await pooled_shell(transport)
        transport.shells.give_back(shell)
        answer = asyncio.ensure_future(transport.run("status", ["~/.rtrain/runs", "r1"]))
        await until("the script to start", lambda: has_children(pid))
        os.kill(pid, signal.SIGKILL)
        done = await answer
        assert not shell.usable
        return done

    try:
        done = on_plain(ssh_hosts, runtime, body)
    finally:
        slow_sh.unlink(missing_ok=True)
    assert b"r1\tmissing" in done.stdout


def test_scripts_through_the_transport_match_their_own_channel(
    ssh_hosts: TestHosts, runtime: Path
) -> None:
    """The daemon's own scripts, many at once: the pool's shells and extra channels agree."""
    args = ["~/.rtrain/runs", "no-such-run", "bad id;rm"]

    async def body(transport: ExecTransport) -> tuple[Completed, list[Completed]]:
        alone = await ProcessTransport.run(transport, "status", args)
        await warm(transport)
        together = await asyncio.gather(*(transport.run("status", args) for _ in range(12)))
        return alone, list(together)

    alone, together = on_plain(ssh_hosts, runtime, body)
    assert b"no-such-run\tmissing" in alone.stdout
    assert all(done == alone for done in together)


def test_a_timed_out_script_loses_its_shell_and_the_next_script_still_answers(
    ssh_hosts: TestHosts, runtime: Path
) -> None:
    async def body(transport: ExecTransport) -> tuple[RpcError, Completed]:
        await warm(transport)
        shell = transport.shells.take()
        assert shell is not None
        transport.shells.give_back(shell)
        with pytest.raises(RpcError) as raised:
            await transport.run("status", ["~/.rtrain/runs", "r0"], timeout=0)
        assert not shell.usable
        return raised.value, await transport.run("status", ["~/.rtrain/runs", "r1"])

    error, after = on_plain(ssh_hosts, runtime, body)
    assert error.kind == Kind.TIMEOUT
    assert "status took longer than 0 s" in error.message
    assert b"r1\tmissing" in after.stdout


def test_a_shell_killed_on_the_far_side_is_a_clear_failure_then_replaced(
    ssh_hosts: TestHosts, runtime: Path
) -> None:
    async def body(transport: ExecTransport) -> tuple[RpcError, Completed, Completed]:
        shell, pid = await pooled_shell(transport)
        # Killed while a script runs in it (as an OOM killer would): that script fails in
        # one sentence that says what happened, not as a lost host.
        running = asyncio.ensure_future(shell.run("sleep 2", [], 30))
        await until("the script to start", lambda: has_children(pid))
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(ShellLost) as lost:
            await running
        failure = await transport._shell_failure("status", lost.value, shell.generation)
        assert isinstance(failure, RpcError)
        transport.shells.give_back(shell)
        assert not shell.usable
        # Killed while idle: the pool notices before anyone asks it.
        idle, pid = await pooled_shell(transport)
        transport.shells.give_back(idle)
        os.kill(pid, signal.SIGKILL)
        await until("the shell to notice", lambda: not idle.usable)
        after_idle = await transport.run("status", ["~/.rtrain/runs", "r1"])
        return failure, after_idle, await transport.run("status", ["~/.rtrain/runs", "r1"])

    failure, after_idle, after = on_plain(ssh_hosts, runtime, body)
    assert failure.kind == Kind.REMOTE_FAILED
    assert "far-side shell running status ended" in failure.message
    assert b"r1\tmissing" in after_idle.stdout
    assert b"r1\tmissing" in after.stdout


def test_a_dead_master_makes_the_host_unreachable_not_a_script_failure(
    ssh_hosts: TestHosts, runtime: Path
) -> None:
    async def body(transport: ExecTransport) -> tuple[RpcError, RpcError, Completed]:
        await warm(transport)
        shell = transport.shells.take()
        assert shell is not None
        master = transport.master._proc
        assert master is not None
        master.kill()
        with pytest.raises(ShellLost) as lost:
            await shell.run("sleep 5", [], 30)
        transport.shells.give_back(shell)
        assert lost.value.returncode == 255
        gone = await transport._shell_failure("status", lost.value, shell.generation)
        # The same loss, told only after a new master is up: still the connection's doing,
        # so callers that retry on an unreachable host (tail, stop) retry.
        await transport.connect()
        replaced = await transport._shell_failure("status", lost.value, shell.generation)
        assert isinstance(gone, RpcError) and isinstance(replaced, RpcError)
        return gone, replaced, await transport.run("status", ["~/.rtrain/runs", "r1"])

    gone, replaced, after = on_plain(ssh_hosts, runtime, body)
    assert gone.kind == Kind.HOST_UNREACHABLE
    assert replaced.kind == Kind.HOST_UNREACHABLE
    assert b"r1\tmissing" in after.stdout


def test_far_side_processes_of_closed_shells_are_gone(ssh_hosts: TestHosts, runtime: Path) -> None:
    async def body(transport: ExecTransport) -> int:
        shell, pid = await pooled_shell(transport)
        transport.shells.give_back(shell)
        return pid

    pid = on_plain(ssh_hosts, runtime, body)
    for _ in range(100):
        if subprocess.run(["kill", "-0", str(pid)], capture_output=True).returncode != 0:
            return
        asyncio.run(asyncio.sleep(0.05))
    raise AssertionError(f"far shell {pid} outlived its transport")


@pytest.fixture
def two_sessions(ssh_hosts: TestHosts) -> Iterator[str]:
    """An alias to an sshd like plain's but allowing two sessions per connection (hardened
    hosts set MaxSessions low): rtrain's shells must not take what transfers need."""
    sshd = Sshd(
        "maxsessions2",
        ssh_hosts.base,
        ssh_hosts.host_key,
        [
            f"AllowUsers {GPU_USER}",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "MaxSessions 2",
        ],
    )
    sshd.start()
    try:
        ssh_hosts.add_alias("maxsessions2", sshd.port)
        yield "maxsessions2"
    finally:
        sshd.close()


def test_a_host_with_few_sessions_still_runs_everything(
    ssh_hosts: TestHosts, runtime: Path, two_sessions: str
) -> None:
    """Both shells hold every session the host allows; a script that needs stdin, an upload
    and a fetch each need one more. They get it: the host gives up its shells."""
    home = ssh_hosts.home(GPU_USER)
    name = f"rtcs-{uuid.uuid4().hex[:8]}"
    far_dir = home / name
    far_dir.mkdir()
    shutil.chown(far_dir, GPU_USER, GPU_USER)
    (far_dir / RUN_MARK).write_text(f"{name}\n")  # a run dir, as prepare.sh makes one
    (far_dir / "model.bin").write_bytes(b"weights" * 1000)
    local = runtime / "data.bin"
    local.write_bytes(b"dataset" * 1000)
    sha = hashlib.sha256(local.read_bytes()).hexdigest()

    async def main() -> tuple[Completed, str]:
        transport = ExecTransport(two_sessions, runtime, ssh_hosts.config_path)
        try:
            await transport.connect()
            await warm(transport)
            for _ in range(200):
                if len(transport.shells._idle) == 2:
                    break
                shell = transport.shells.take()  # taking and giving back opens the second
                if shell is not None:
                    transport.shells.give_back(shell)
                await asyncio.sleep(0.05)
            assert len(transport.shells._idle) == 2, "both shells should be open"
            done = await transport.run("status", ["~/.rtrain/runs", "r1"], stdin=b"\n")
            await whole_file.upload(transport, local, f"~/{name}/data.bin", sha)
            got = await whole_file.download(
                transport, f"~/{name}", "model.bin", runtime / "model.bin"
            )
            # ...and scripts still answer, each on a channel of its own now.
            assert transport.shells.take() is None
            await transport.run("status", ["~/.rtrain/runs", "r1"])
            return done, got
        finally:
            await transport.close()

    try:
        done, got = asyncio.run(main())
        assert b"r1\tmissing" in done.stdout
        assert (far_dir / "data.bin").read_bytes() == local.read_bytes()
        assert (runtime / "model.bin").read_bytes() == (far_dir / "model.bin").read_bytes()
        assert got == hashlib.sha256((far_dir / "model.bin").read_bytes()).hexdigest()
    finally:
        shutil.rmtree(far_dir, ignore_errors=True)


def test_no_script_that_reads_secrets_takes_its_stdin_through_a_shell() -> None:
    # A far bash may keep a here-document in a temporary file; secrets never touch the disk.
    from importlib import resources

    from rtrain.daemon.ssh.exec_transport import LINES_ON_STDIN

    scripts = resources.files("rtrain.daemon.remote") / "scripts"
    for name in LINES_ON_STDIN:
        own = (scripts / f"{name}.sh").read_text()
        assert "read_secrets" not in own and "read_launch_input" not in own, name
