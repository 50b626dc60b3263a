"""Files both ways over the console gateway, which has no scp and no sftp."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from rtrain.daemon.ssh.console_transport import ConsoleTransport
from rtrain.daemon.transfer import whole_file
from rtrain.protocol.errors import Kind, RpcError
from tests.console.conftest import Consoles, Far
from tests.run_mark import entries

# Every byte value, in every position modulo 256, and a length that is no multiple of
# anything: spans several chunks with a short last one.
EVERY_BYTE = bytes(range(256)) * 9000 + bytes(range(255, -1, -1)) + b"\x00\r\n\x1b"
ODD_NAMES = ["with space.bin", "données d'été ✓.bin", "-leading dash", "tab\tand newline\n.bin"]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_every_byte_value_goes_up_and_comes_back_identical(
    console: Consoles, far: Far, tmp_path: Path
) -> None:
    local = tmp_path / "every-byte.bin"
    local.write_bytes(EVERY_BYTE)
    run_dir, run_path = far.run_dir("bytes")
    progress: list[int] = []

    async def body(transport: ConsoleTransport) -> tuple[str, list[int]]:
        await whole_file.upload(
            transport, local, f"{run_dir}/copy.bin", sha256(EVERY_BYTE), progress.append
        )
        back: list[int] = []
        got = await whole_file.download(
            transport, run_dir, "copy.bin", tmp_path / "back.bin", back.append
        )
        return got, back

    got, back = console.run(body)
    assert (run_path / "copy.bin").read_bytes() == EVERY_BYTE
    assert not (run_path / "copy.bin.part").exists()
    assert (tmp_path / "back.bin").read_bytes() == EVERY_BYTE
    assert got == sha256(EVERY_BYTE)
    assert sum(progress) == sum(back) == len(EVERY_BYTE)
    assert len(progress) > 1  # reported chunk by chunk, as on other transports


@pytest.mark.parametrize("name", ODD_NAMES)
def test_file_names_with_spaces_quotes_and_non_ascii(
    console: Consoles, far: Far, tmp_path: Path, name: str
) -> None:
    data = os.urandom(3000) + name.encode()
    local = tmp_path / "source"
    local.write_bytes(data)
    run_dir, run_path = far.run_dir("names")

    async def body(transport: ConsoleTransport) -> str:
        await whole_file.upload(transport, local, f"{run_dir}/{name}", sha256(data))
        return await whole_file.download(transport, run_dir, name, tmp_path / "back")

    assert console.run(body) == sha256(data)
    assert (run_path / name).read_bytes() == data
    assert (tmp_path / "back").read_bytes() == data


def test_empty_file_both_ways(console: Consoles, far: Far, tmp_path: Path) -> None:
    local = tmp_path / "empty"
    local.write_bytes(b"")
    run_dir, run_path = far.run_dir("empty")

    async def body(transport: ConsoleTransport) -> str:
        await whole_file.upload(transport, local, f"{run_dir}/empty", sha256(b""))
        return await whole_file.download(transport, run_dir, "empty", tmp_path / "back")

    assert console.run(body) == sha256(b"")
    assert (run_path / "empty").read_bytes() == b""


def test_a_wrong_expected_hash_keeps_nothing(console: Consoles, far: Far, tmp_path: Path) -> None:
    local = tmp_path / "data"
    local.write_bytes(os.urandom(3 * 1024 * 1024 + 5))
    run_dir, run_path = far.run_dir("mismatch")

    async def body(transport: ConsoleTransport) -> None:
        await whole_file.upload(transport, local, f"{run_dir}/data", sha256(b"something else"))

    with pytest.raises(RpcError) as caught:
        console.run(body)
    assert caught.value.kind == Kind.TRANSFER_FAILED
    assert "sha256 mismatch" in caught.value.message
    assert entries(run_path) == []


def test_upload_into_a_missing_directory_fails_with_the_reason(
    console: Consoles, far: Far, tmp_path: Path
) -> None:
    local = tmp_path / "data"
    local.write_bytes(b"x")

    async def body(transport: ConsoleTransport) -> None:
        await whole_file.upload(transport, local, f"{far.tilde}/no/such/dir/data", sha256(b"x"))

    with pytest.raises(RpcError) as caught:
        console.run(body)
    assert caught.value.kind == Kind.TRANSFER_FAILED
    assert "no/such/dir/data.part" in caught.value.message


def test_download_refuses_what_send_sh_refuses(console: Consoles, far: Far, tmp_path: Path) -> None:
    run_dir, run_path = far.run_dir("refusals")
    (run_path / "inner").mkdir()
    (run_path / "escape").symlink_to("/etc/hostname")

    async def body(transport: ConsoleTransport) -> list[str]:
        messages = []
        for rel in ("missing.bin", "inner", "escape", "../../.bashrc"):
            with pytest.raises(RpcError) as caught:
                await whole_file.download(transport, run_dir, rel, tmp_path / "out")
            assert caught.value.kind == Kind.TRANSFER_FAILED
            messages.append(caught.value.message)
        return messages

    missing, directory, link, dotdot = console.run(body)
    assert "reading missing.bin failed" in missing
    assert "exit status 8" in directory
    assert "exit status 7" in link
    assert "exit status" in dotdot
