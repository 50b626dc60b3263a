"""Fetch and upload hash the bytes as they move, so the far disk reads each file once.

send.sh hashes what it sends and says so on stderr after the bytes; receive.sh hashes what
it writes. The daemon's side (ProcessTransport.download/upload) runs here for real, without
ssh, on each far shell rtrain meets: dash, bash, busybox ash (with busybox's tools) and zsh
as sh. A file that changes while it is read is refused, never passed off as a copy.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

import pytest

from rtrain.daemon.transfer import whole_file
from rtrain.daemon.transfer.whole_file import Progress
from rtrain.daemon.transports.local_transport import LocalTransport
from rtrain.protocol.errors import Kind, RpcError
from tests.required_tools import need
from tests.run_mark import names

from .conftest import Remote

T = TypeVar("T")

# Far shells, each started under the name `sh` (as /bin/sh would be), so bash and zsh run in
# their POSIX modes.
SHELLS = ("dash", "bash", "busybox", "zsh")
# What send.sh and receive.sh run besides the shell: busybox's own, on a busybox host.
BUSYBOX_TOOLS = ("tee", "cat", "stat", "ls", "wc", "sha256sum", "readlink", "mv", "rm", "tr")
# Larger than everything that can sit between the far side's read and the daemon's first
# chunk (the daemon's 1 MiB read, its stream buffer, two pipes): when the first chunk
# arrives, the far side is still reading.
MID_TRANSFER_SIZE = 16 * 1024 * 1024


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ShellTransport(LocalTransport):
    """The `local` transport, with its /bin/sh replaced by another shell and HOME moved."""

    def __init__(self, shell: Path, home: Path) -> None:
        self.shell = shell
        self.home = home

    def _argv(self, text: str, args: Sequence[str]) -> list[str]:
        argv = super()._argv(text, args)
        assert argv[0] == "/bin/sh"
        path = f"{self.shell.parent}{os.pathsep}{os.environ.get('PATH', '')}"
        return ["env", f"HOME={self.home}", f"PATH={path}", str(self.shell), *argv[1:]]


@pytest.fixture(params=SHELLS)
def far_shell(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A directory holding `sh` (the shell under test) and, for busybox, its tools."""
    name: str = request.param
    found = need(name)
    front = tmp_path / f"{name}-bin"
    front.mkdir()
    (front / "sh").symlink_to(found)
    if name == "busybox":
        for tool in BUSYBOX_TOOLS:
            (front / tool).symlink_to(found)
    return front / "sh"


@pytest.fixture
def far_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".rtrain" / "run-1").mkdir(parents=True)
    (home / ".rtrain" / "run-1" / ".rtrain-run").write_text("run-1\n")  # prepare's mark
    return home


def on(far_shell: Path, far_home: Path, body: Callable[[ShellTransport], Awaitable[T]]) -> T:
    async def main() -> T:
        return await body(ShellTransport(far_shell, far_home))

    return asyncio.run(main())


def download(
    far_shell: Path, far_home: Path, rel: str, dest: Path, progress: Progress | None = None
) -> str:
    async def body(transport: ShellTransport) -> str:
        return await whole_file.download(transport, "~/.rtrain/run-1", rel, dest, progress)

    return on(far_shell, far_home, body)


MARKERS = (
    # Every line send.sh could say, as the content of a file: it says them on stderr, never
    # in the bytes, so they are only bytes.
    b"sent\t" + sha256(b"x").encode() + b"\n",
    b"changed\tdata.bin\nerror\tunreadable\tdata.bin\n",
    b"payload" + b"\nsent\t" + sha256(b"payload").encode(),
)


@pytest.mark.parametrize(
    "content",
    [b"", os.urandom(3 * 1024 * 1024 + 17), *MARKERS],
    ids=["empty", "3mib", "sent-line", "other-lines", "sent-at-the-end"],
)
def test_download_returns_the_far_hash_of_exactly_the_bytes_that_arrived(
    far_shell: Path, far_home: Path, tmp_path: Path, content: bytes
) -> None:
    (far_home / ".rtrain" / "run-1" / "data.bin").write_bytes(content)
    dest = tmp_path / "back.bin"

    got = download(far_shell, far_home, "data.bin", dest)

    assert got == sha256(content)
    assert dest.read_bytes() == content


def grow(path: Path) -> None:
    with open(path, "ab") as out:
        out.write(b"one more line\n")


def shrink(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def replace(path: Path) -> None:
    """A new file renamed over the old one, as torch.save-then-rename does: same size."""
    fresh = path.with_name("fresh")
    fresh.write_bytes(os.urandom(path.stat().st_size))
    fresh.replace(path)


@pytest.mark.slow
@pytest.mark.parametrize("change", [grow, shrink, replace], ids=lambda change: change.__name__)
def test_a_file_that_changes_while_it_is_sent_is_refused(
    far_shell: Path, far_home: Path, tmp_path: Path, change: Callable[[Path], None]
) -> None:
    far_file = far_home / ".rtrain" / "run-1" / "model.bin"
    far_file.write_bytes(os.urandom(MID_TRANSFER_SIZE))
    changed: list[int] = []

    def on_progress(count: int) -> None:
        if not changed:
            change(far_file)
        changed.append(count)

    with pytest.raises(RpcError) as caught:
        download(far_shell, far_home, "model.bin", tmp_path / "back.bin", on_progress)

    assert changed, "the change happened during the transfer"
    assert caught.value.kind == Kind.TRANSFER_FAILED
    assert "changed while fetching" in caught.value.message
    assert caught.value.data is not None
    assert caught.value.data["path"] == "model.bin"


def test_a_refused_path_is_a_failed_read_with_no_verdict(
    far_shell: Path, far_home: Path, tmp_path: Path
) -> None:
    with pytest.raises(RpcError) as caught:
        download(far_shell, far_home, "missing.bin", tmp_path / "back.bin")

    assert caught.value.kind == Kind.TRANSFER_FAILED
    assert "reading missing.bin failed" in caught.value.message


def upload(far_shell: Path, far_home: Path, local: Path, remote_path: str, digest: str) -> None:
    async def body(transport: ShellTransport) -> None:
        await whole_file.upload(transport, local, remote_path, digest)

    on(far_shell, far_home, body)


def test_upload_is_hashed_as_it_is_written(far_shell: Path, far_home: Path, tmp_path: Path) -> None:
    data = os.urandom(2 * 1024 * 1024 + 3) + MARKERS[0]
    local = tmp_path / "data.bin"
    local.write_bytes(data)
    run_dir = far_home / ".rtrain" / "run-1"

    upload(far_shell, far_home, local, "~/.rtrain/run-1/data.bin", sha256(data))
    with pytest.raises(RpcError) as mismatch:
        upload(far_shell, far_home, local, "~/.rtrain/run-1/other.bin", sha256(b"other"))
    with pytest.raises(RpcError) as missing_dir:
        upload(far_shell, far_home, local, "~/.rtrain/no/such/dir.bin", sha256(data))

    assert (run_dir / "data.bin").read_bytes() == data
    assert mismatch.value.kind == Kind.TRANSFER_FAILED
    assert "sha256 mismatch" in mismatch.value.message
    assert missing_dir.value.kind == Kind.TRANSFER_FAILED
    assert "dir.bin.part" in missing_dir.value.message
    assert names(run_dir) == ["data.bin"]


# Hosts without tee (or without /dev/fd) send, then hash a second read: same answers.


def test_send_without_tee_reads_twice_with_the_same_answer(
    remote: Remote, stripped_path: Callable[[set[str]], str]
) -> None:
    _, run_dir = remote.prepare()
    data = os.urandom(100_000) + MARKERS[1]
    (run_dir / "data.bin").write_bytes(data)
    env = {**remote.env, "PATH": stripped_path({"tee"})}

    result = remote.run("send", str(run_dir), "data.bin", env=env)

    assert (result.returncode, result.stdout) == (0, data)
    assert result.stderr == f"sent\t{sha256(data)}\n"


def test_receive_without_tee_hashes_the_written_file(
    remote: Remote, stripped_path: Callable[[set[str]], str]
) -> None:
    _, run_dir = remote.prepare()
    data = os.urandom(100_000)
    env = {**remote.env, "PATH": stripped_path({"tee"})}

    kept = remote.run("receive", str(run_dir / "a.bin"), sha256(data), stdin=data, env=env)
    refused = remote.run("receive", str(run_dir / "b.bin"), "0" * 64, stdin=data, env=env)

    assert kept.lines == [["ok", sha256(data), str(len(data))]]
    assert refused.returncode == 3
    assert names(run_dir) == ["a.bin"]


def test_the_listing_for_a_fetch_gives_sizes_without_hashes(remote: Remote) -> None:
    _, run_dir = remote.prepare()
    (run_dir / "out").mkdir()
    (run_dir / "out" / "a.bin").write_bytes(b"abc")
    (run_dir / "out" / "empty").write_bytes(b"")

    sizes = remote.run("list_files", str(run_dir), "out", "none")
    bad_mode = remote.run("list_files", str(run_dir), "out", "md5")

    assert sorted(sizes.values("file")) == [["0", "-", "out/empty"], ["3", "-", "out/a.bin"]]
    assert (bad_mode.returncode, bad_mode.lines) == (2, [["error", "usage"]])


def test_hash_file_checks_paths_like_send(remote: Remote, tmp_path: Path) -> None:
    _, run_dir = remote.prepare()
    (run_dir / "tab\there.bin").write_bytes(b"data")
    (run_dir / "escape").symlink_to(tmp_path)

    named = remote.run("hash_file", str(run_dir), "tab\there.bin")
    outside = remote.run("hash_file", str(run_dir), "escape")

    assert named.lines == [["file", "4", sha256(b"data")]]
    assert (outside.returncode, outside.lines) == (7, [["error", "path_outside_run", "escape"]])
