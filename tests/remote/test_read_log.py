"""read_log.sh: exact byte ranges of train.log, restarting after rotation."""

from __future__ import annotations

import os
from pathlib import Path

from .conftest import Remote, wait_file, wait_for

PAYLOAD = b"line one\nline two\n\x00\xff\xfe binary \xc3\xa9\n"


def read_log(
    remote: Remote, run_dir: Path, run_id: str, offset: int, max_bytes: int, inode: str
) -> tuple[list[str], bytes]:
    """Header fields after `log`, and the bytes that followed it."""
    result = remote.run("read_log", str(run_dir), run_id, str(offset), str(max_bytes), inode)
    assert result.returncode == 0, result
    header, _, body = result.stdout.partition(b"\n")
    fields = header.decode().split("\t")
    assert fields[0] == "log"
    assert int(fields[4]) == len(body), "exactly COUNT bytes follow the header"
    return fields[1:], body


def test_reads_ranges_of_a_finished_run(remote: Remote) -> None:
    launched = remote.launch(f"import sys; sys.stdout.buffer.write({PAYLOAD!r})")
    wait_file(launched.run_dir / ".rtrain" / "status")
    inode = str(os.stat(launched.run_dir / "train.log").st_ino)

    header, body = read_log(remote, launched.run_dir, launched.run_id, 0, 1000, "-")
    assert header == [inode, str(len(PAYLOAD)), "0", str(len(PAYLOAD)), "completed", "0"]
    assert body == PAYLOAD

    header, body = read_log(remote, launched.run_dir, launched.run_id, 5, 7, inode)
    assert header[2:4] == ["5", "7"]
    assert body == PAYLOAD[5:12]

    header, body = read_log(remote, launched.run_dir, launched.run_id, len(PAYLOAD), 100, inode)
    assert header[2:4] == [str(len(PAYLOAD)), "0"]
    assert body == b""


def test_running_state_and_growth(remote: Remote) -> None:
    trainer = "import time; print('first', flush=True); time.sleep(120)"
    launched = remote.launch(trainer)
    log = launched.run_dir / "train.log"
    wait_for(lambda: log.exists() and log.read_bytes() == b"first\n", what="first line")

    header, body = read_log(remote, launched.run_dir, launched.run_id, 0, 1 << 20, "-")

    assert header[1:] == ["6", "0", "6", "running", "-"]
    assert body == b"first\n"


def test_rotation_restarts_from_zero(remote: Remote) -> None:
    run_id, run_dir = remote.prepare()
    log = run_dir / "train.log"
    log.write_bytes(b"old content that was long\n")
    old_inode = str(os.stat(log).st_ino)
    replacement = run_dir / "train.log.new"
    replacement.write_bytes(b"fresh\n")
    os.rename(replacement, log)

    header, body = read_log(remote, run_dir, run_id, 10, 100, old_inode)

    assert header[0] == str(os.stat(log).st_ino) != old_inode
    assert header[2:4] == ["0", "6"]
    assert body == b"fresh\n"


def test_truncation_restarts_from_zero(remote: Remote) -> None:
    run_id, run_dir = remote.prepare()
    log = run_dir / "train.log"
    log.write_bytes(b"0123456789" * 3)
    inode = str(os.stat(log).st_ino)
    log.write_bytes(b"short\n")

    header, body = read_log(remote, run_dir, run_id, 20, 100, inode)

    assert header[0] == inode
    assert header[2:4] == ["0", "6"]
    assert body == b"short\n"


def test_missing_log_reads_as_empty(remote: Remote) -> None:
    run_id, run_dir = remote.prepare()

    header, body = read_log(remote, run_dir, run_id, 0, 100, "-")

    assert header == ["-", "0", "0", "0", "lost", "-"]
    assert body == b""


def test_large_log_in_bounded_chunks(remote: Remote) -> None:
    run_id, run_dir = remote.prepare()
    content = bytes(range(256)) * 4096
    (run_dir / "train.log").write_bytes(content)

    collected = b""
    offset = 0
    inode = "-"
    while offset < len(content):
        header, body = read_log(remote, run_dir, run_id, offset, 300_000, inode)
        inode = header[0]
        assert int(header[2]) == offset
        collected += body
        offset += len(body)

    assert collected == content
