"""put_range.sh, seal_input.sh and send_range.sh: the pieces of a large file.

An upload arrives in pieces, each verified as it is written, and is sealed into the cache
and the run directory without being hashed whole again when every piece's marker holds the
digest it verified against. A piece whose bytes are written again loses its marker until
they verify; without every marker, the seal hashes the whole copy, so bytes that no marker
vouches for never reach a run. A fetch reads a piece and hashes it as it leaves. With python3
on the host one process moves each piece (range_mover.py); without it, a pipeline of tools.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.run_mark import names

from .conftest import Remote

MIB = 1024 * 1024
# Two whole pieces of 1 MiB and a short last one.
DATA = bytes(range(256)) * (2 * MIB // 256) + b"tail of the file"
PIECES = [(0, MIB), (MIB, MIB), (2 * MIB, len(DATA) - 2 * MIB)]
WORKDIR = "~/.rtrain"


@pytest.fixture(params=["python3", "no-python3"])
def far(
    remote: Remote, request: pytest.FixtureRequest, stripped_path: Callable[[set[str]], str]
) -> Remote:
    """The far host with python3, and one without it (its scripts fall back on tools)."""
    if request.param == "no-python3":
        remote.env = {**remote.env, "PATH": stripped_path({"python3"})}
    return remote


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


SHA = sha256(DATA)


def put(far: Remote, offset: int, length: int, data: bytes = DATA) -> int:
    """One piece of `data`, sent as the piece of DATA at `offset`; the script's exit."""
    expected = sha256(DATA[offset : offset + length])
    result = far.run(
        "put_range", WORKDIR, SHA, str(len(DATA)), str(offset), str(length), expected,
        stdin=data[offset : offset + length],
    )  # fmt: skip
    return result.returncode


def seal(far: Remote, run_dir: Path) -> tuple[int, str]:
    result = far.run("seal_input", WORKDIR, SHA, str(len(DATA)), str(run_dir), "data.bin")
    return result.returncode, result.stdout.decode()


def cache(far: Remote) -> Path:
    return far.home / ".rtrain" / ".cache"


def test_a_copy_whose_pieces_all_verified_is_sealed_and_placed(far: Remote) -> None:
    _, run_dir = far.prepare()
    assert [put(far, offset, length) for offset, length in reversed(PIECES)] == [0, 0, 0]
    code, said = seal(far, run_dir)
    assert code == 0, said
    assert (run_dir / "data.bin").read_bytes() == DATA
    assert (cache(far) / "inputs" / SHA).read_bytes() == DATA
    assert names(cache(far) / "partial") == []


def test_a_piece_written_again_with_other_bytes_keeps_the_copy_from_any_run(far: Remote) -> None:
    # Two starts ship the same dataset; the second one's file changed under it: its piece
    # is refused, and its bytes, already written over the first start's, are not sealed.
    _, run_dir = far.prepare()
    assert [put(far, offset, length) for offset, length in PIECES] == [0, 0, 0]
    changed = b"X" * MIB + DATA[MIB:]
    assert put(far, 0, MIB, changed) == 3
    code, said = seal(far, run_dir)
    assert code == 3 and "mismatch" in said, said
    assert not (run_dir / "data.bin").exists()
    assert not (cache(far) / "inputs" / SHA).exists()


def test_pieces_an_older_rtrain_left_are_hashed_whole_at_the_seal(far: Remote) -> None:
    # An older rtrain's markers are empty: they name a verified piece but not its digest.
    _, run_dir = far.prepare()
    assert [put(far, offset, length) for offset, length in PIECES] == [0, 0, 0]
    partial = cache(far) / "partial"
    for marker in (partial / f"{SHA}.pieces").iterdir():
        marker.write_bytes(b"")
    # ...and the copy was damaged since: the seal's hash of the whole copy finds it.
    with open(partial / SHA, "r+b") as copy:
        copy.seek(MIB + 5)
        copy.write(b"!")
    code, said = seal(far, run_dir)
    assert code == 3 and "mismatch" in said, said
    assert not (run_dir / "data.bin").exists()
    assert not (cache(far) / "inputs" / SHA).exists()


def test_a_piece_is_sent_with_its_digest_after_it(far: Remote) -> None:
    _, run_dir = far.prepare()
    (run_dir / "out.bin").write_bytes(DATA)
    state = far.run("file_state", str(run_dir), "out.bin")
    assert state.returncode == 0, state
    line = "\t".join(state.values("state")[0][1:])
    offset, length = PIECES[1]
    sent = far.run("send_range", str(run_dir), "out.bin", str(offset), str(length), line)
    assert sent.returncode == 0, sent
    assert sent.stdout == DATA[offset : offset + length]
    assert f"sent\t{sha256(DATA[offset : offset + length])}" in sent.stderr


def put_run(far: Remote, data: bytes = DATA) -> tuple[int, str]:
    """Every piece of DATA in one stream (one far process for them all), `data` on stdin."""
    args = [WORKDIR, SHA, str(len(DATA))]
    for offset, length in PIECES:
        args += [str(offset), str(length), sha256(DATA[offset : offset + length])]
    result = far.run("put_range", *args, stdin=data)
    return result.returncode, result.stdout.decode()


def test_several_pieces_in_one_stream_are_each_kept_and_sealed(remote: Remote) -> None:
    _, run_dir = remote.prepare()
    code, said = put_run(remote)
    assert code == 0, said
    assert said.splitlines() == [f"piece\t{offset}\t{length}" for offset, length in PIECES]
    code, said = seal(remote, run_dir)
    assert code == 0, said
    assert (run_dir / "data.bin").read_bytes() == DATA


def test_without_python3_a_run_of_pieces_is_refused_before_any_byte_is_read(
    remote: Remote, stripped_path: Callable[[set[str]], str]
) -> None:
    # The daemon then sends each piece in a stream of its own.
    remote.env = {**remote.env, "PATH": stripped_path({"python3"})}
    _, run_dir = remote.prepare()
    code, said = put_run(remote)
    assert code == 2 and said.startswith("error\tone_piece"), said
    assert names(cache(remote) / "partial") == []
    assert [put(remote, offset, length) for offset, length in PIECES] == [0, 0, 0]
    code, said = seal(remote, run_dir)
    assert code == 0, said
    assert (run_dir / "data.bin").read_bytes() == DATA


def test_a_run_of_pieces_keeps_those_that_verified_before_one_that_did_not(
    remote: Remote,
) -> None:
    # The second piece's bytes are not the file's: the first stays verified (a resumed
    # upload sends only the others), the second and third are not kept.
    _, run_dir = remote.prepare()
    damaged = bytearray(DATA)
    damaged[MIB + 7] ^= 1
    code, said = put_run(remote, bytes(damaged))
    assert code == 3 and "mismatch" in said, said
    markers = names(cache(remote) / "partial" / f"{SHA}.pieces")
    assert markers == [f"0-{MIB}"]
    # A stream one byte longer than its pieces: the last piece does not verify.
    code, said = put_run(remote, DATA + b"!")
    assert code == 3 and f"piece\t0\t{MIB}" in said and f"piece\t{MIB}\t{MIB}" in said, said
