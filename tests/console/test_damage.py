"""Bytes damaged or lost between rtrain and the far shell: resent, or a loud failure.

damaging_ssh.py sits between the transport and the real ssh, so the damage happens on the
console's own byte stream, where a terminal or a relay would do it (ssh's own integrity
checks never see it).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from rtrain.daemon.ssh import console_session
from rtrain.daemon.ssh.console_framing import Request
from rtrain.daemon.ssh.console_transport import ConsoleTransport
from rtrain.daemon.transfer import whole_file
from rtrain.daemon.transports.transport import Completed
from rtrain.protocol.errors import Kind, RpcError
from tests.console.conftest import Consoles, DamagingSsh, Far
from tests.run_mark import entries

# Three chunks up, two down; the damage lands past the agent's start-up, inside the data.
SIZE = 3 * 1024 * 1024 + 12345
AFTER = 200_000


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def data_file(tmp_path: Path) -> tuple[Path, bytes]:
    data = os.urandom(SIZE)
    path = tmp_path / "data.bin"
    path.write_bytes(data)
    return path, data


@pytest.fixture
def quick_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """A console that lost bytes is given up after seconds, not half a minute."""
    monkeypatch.setattr(console_session, "ACK_SLACK", 2.0)
    monkeypatch.setattr(console_session, "SLOW_RATE", 10e6)
    monkeypatch.setattr(console_session, "PROBE", 1.0)


def test_a_chunk_damaged_on_the_way_up_is_sent_again(
    console: Consoles, far: Far, damaging_ssh: DamagingSsh, data_file: tuple[Path, bytes]
) -> None:
    local, data = data_file
    damaging_ssh.damage("up", AFTER, "once")
    run_dir, run_path = far.run_dir("up-once")

    async def body(transport: ConsoleTransport) -> int:
        await whole_file.upload(transport, local, f"{run_dir}/data.bin", sha256(data))
        return transport.damaged

    damaged = console.run(body)
    assert len(damaging_ssh.damages) == 1
    assert damaged == 1
    assert (run_path / "data.bin").read_bytes() == data


def test_a_chunk_damaged_on_the_way_down_is_sent_again(
    console: Consoles, far: Far, damaging_ssh: DamagingSsh, tmp_path: Path
) -> None:
    data = os.urandom(SIZE)
    run_dir, run_path = far.run_dir("down-once")
    (run_path / "data.bin").write_bytes(data)
    damaging_ssh.damage("down", AFTER, "once")

    async def body(transport: ConsoleTransport) -> tuple[str, int]:
        got = await whole_file.download(transport, run_dir, "data.bin", tmp_path / "back.bin")
        return got, transport.damaged

    got, damaged = console.run(body)
    assert len(damaging_ssh.damages) == 1
    assert damaged == 1
    assert got == sha256(data)
    assert (tmp_path / "back.bin").read_bytes() == data


def test_a_damaged_answer_is_read_again_without_running_the_command_twice(
    console: Consoles, far: Far, damaging_ssh: DamagingSsh
) -> None:
    # Appends a line per run, then prints a lot: the damage lands in the output.
    script = 'echo ran >>"$1"; head -c 600000 /dev/zero | tr "\\0" "y"'
    damaging_ssh.damage("down", AFTER, "once")

    async def body(transport: ConsoleTransport) -> Completed:
        return await transport.execute(
            Request.of(script, [f"{far.tilde[2:]}/runs"], None), 30, "printer", idempotent=False
        )

    done = console.run(body)
    assert len(damaging_ssh.damages) == 1
    assert done.returncode == 0 and done.stdout == b"y" * 600_000
    assert (far.path / "runs").read_text() == "ran\n"


@pytest.mark.usefixtures("quick_probe")
def test_bytes_lost_on_the_way_up_cost_a_console_not_the_file(
    console: Consoles, far: Far, damaging_ssh: DamagingSsh, data_file: tuple[Path, bytes]
) -> None:
    # What truncates large pastes on real gateways: the far side never gets some bytes.
    local, data = data_file
    damaging_ssh.damage("up", AFTER, "drop")
    run_dir, run_path = far.run_dir("up-drop")

    async def body(transport: ConsoleTransport) -> None:
        await whole_file.upload(transport, local, f"{run_dir}/data.bin", sha256(data))

    console.run(body)
    assert len(damaging_ssh.damages) == 1 and "dropped" in damaging_ssh.damages[0]
    assert (run_path / "data.bin").read_bytes() == data


@pytest.mark.usefixtures("quick_probe")
def test_an_upload_that_keeps_arriving_damaged_fails_loudly_and_keeps_nothing(
    console: Consoles, far: Far, damaging_ssh: DamagingSsh, data_file: tuple[Path, bytes]
) -> None:
    local, data = data_file
    damaging_ssh.damage("up", AFTER, "every")
    run_dir, run_path = far.run_dir("up-every")

    async def body(transport: ConsoleTransport) -> None:
        await whole_file.upload(transport, local, f"{run_dir}/data.bin", sha256(data))

    with pytest.raises(RpcError) as caught:
        console.run(body)
    assert caught.value.kind in (Kind.TRANSFER_FAILED, Kind.HOST_UNREACHABLE)
    assert len(damaging_ssh.damages) > 1
    assert entries(run_path) == []


@pytest.mark.usefixtures("quick_probe")
def test_a_download_that_keeps_arriving_damaged_fails_loudly(
    console: Consoles, far: Far, damaging_ssh: DamagingSsh, tmp_path: Path
) -> None:
    run_dir, run_path = far.run_dir("down-every")
    (run_path / "data.bin").write_bytes(os.urandom(SIZE))
    damaging_ssh.damage("down", AFTER, "every")

    async def body(transport: ConsoleTransport) -> str:
        return await whole_file.download(transport, run_dir, "data.bin", tmp_path / "back.bin")

    with pytest.raises(RpcError) as caught:
        console.run(body)
    assert caught.value.kind in (Kind.TRANSFER_FAILED, Kind.HOST_UNREACHABLE, Kind.TIMEOUT)
    assert len(damaging_ssh.damages) > 1
