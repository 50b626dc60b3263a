"""A console download counts only once the far side's hash of the whole file matches the
chunks: a file that changed between chunks is refused."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from rtrain.daemon.ssh.console_transport import ConsoleTransport
from rtrain.daemon.transfer import whole_file
from rtrain.protocol.errors import Kind, RpcError
from tests.console.conftest import Consoles, Far

# Several chunks (console_chunks.DOWNLOAD_CHUNK): the first comes alone, the rest after it.
SIZE = 5 * 1024 * 1024 + 99


def test_a_file_rewritten_between_chunks_is_refused(
    console: Consoles, far: Far, tmp_path: Path
) -> None:
    run_dir, run_path = far.run_dir("rewritten")
    far_file = run_path / "model.bin"
    far_file.write_bytes(os.urandom(SIZE))
    rewritten: list[int] = []

    def on_progress(count: int) -> None:
        # After the first chunk, its bytes change in place: what arrived is no version of
        # the file, and the far side's hash (taken after the last chunk) says so.
        if not rewritten:
            with open(far_file, "r+b") as out:
                out.write(b"new!")
        rewritten.append(count)

    async def body(transport: ConsoleTransport) -> str:
        return await whole_file.download(
            transport, run_dir, "model.bin", tmp_path / "back", on_progress
        )

    with pytest.raises(RpcError) as caught:
        console.run(body)
    assert rewritten
    assert caught.value.kind == Kind.TRANSFER_FAILED
    assert "changed while fetching" in caught.value.message


def test_a_steady_file_is_vouched_for_by_the_far_side(
    console: Consoles, far: Far, tmp_path: Path
) -> None:
    run_dir, run_path = far.run_dir("steady")
    data = os.urandom(SIZE)
    (run_path / "model.bin").write_bytes(data)

    async def body(transport: ConsoleTransport) -> str:
        return await whole_file.download(transport, run_dir, "model.bin", tmp_path / "back")

    assert console.run(body) == hashlib.sha256(data).hexdigest()
    assert (tmp_path / "back").read_bytes() == data
