"""A directory of many small files comes home in a few streams, not a channel per file, each
file verified by its own sha256, against the real sshd."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from rtrain.client.errors import RemoteError
from tests.hosts import GPU_USER
from tests.operations.harness import Ops
from tests.transfers.test_engine import (
    fetch,
    finished_run,
    partial_records,
    patterned,
    sha256,
    small_local_disk,
    transfers_running,
    two_sessions,
)

__all__ = ["small_local_disk", "two_sessions"]

ODD_NAMES = [
    "a b.txt",
    "ünï/çödé ✓.bin",
    "-starts-with-dash",
    'quote\'s "double"',
    "back\\slash",
    "star*and?[x]",
    "$(touch pwned)",
    "empty",
]


def far_tree(ops: Ops, run_id: str, count: int) -> dict[str, bytes]:
    """`count` small files under `tree/` (every byte value at every offset, sizes from 0 to
    64 KiB, odd names), two empty directories; owned by the far user."""
    root = ops.far_run_dir(run_id) / "tree"
    files: dict[str, bytes] = {}
    for n in range(count):
        name = ODD_NAMES[n] if n < len(ODD_NAMES) else f"d{n % 17}/f{n:04d}.bin"
        files[f"tree/{name}"] = b"" if name == "empty" else patterned((n * 977) % 65536, salt=n)
    for rel, data in files.items():
        path = ops.far_run_dir(run_id) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (root / "nothing here").mkdir()
    (root / "deep" / "er" / "est").mkdir(parents=True)
    subprocess.run(["chown", "-R", f"{GPU_USER}:{GPU_USER}", str(root)], check=True)
    return files


def sessions_in(log: Path, offset: int) -> int:
    """The sessions (one per channel that ran a command) sshd opened since `offset`."""
    with open(log, "rb") as f:
        f.seek(offset)
        return f.read().count(b"Starting session: command")


def no_stream_copies(dest: Path) -> bool:
    return not any(
        ".rtrain-partial" in Path(folder).parts or ".rtrain-partial" in dirs
        for folder, dirs, _names in os.walk(dest)
    )


def test_a_tree_of_many_small_files_comes_home_in_a_few_streams_byte_exact(ops: Ops) -> None:
    run_id = finished_run(ops)
    files = far_tree(ops, run_id, 600)
    dest = ops.tmp / "home"
    log = ops.hosts.plain_log
    before = log.stat().st_size

    result = fetch(ops, run_id, "tree", dest)

    for rel, data in files.items():
        assert (dest / rel).read_bytes() == data, rel
    assert (dest / "tree" / "nothing here").is_dir()
    assert (dest / "tree" / "deep" / "er" / "est").is_dir()
    assert not (dest / "pwned").exists() and not (dest / "tree" / "pwned").exists()
    assert {f.remote_path: f.sha256 for f in result.files} == {
        rel: sha256(data) for rel, data in files.items()
    }
    assert result.sent_bytes == sum(map(len, files.values())) and result.skipped == 0
    # A channel per file would be 600 sessions; the listing and a few streams are a handful.
    assert sessions_in(log, before) <= 12
    assert no_stream_copies(dest) and partial_records(dest) == []
    # Again: every file is home already, none is sent.
    again = fetch(ops, run_id, "tree", dest)
    assert (again.skipped, again.sent_bytes) == (len(files), 0)


def test_a_file_changing_while_its_tree_streams_is_refused_and_never_lands(ops: Ops) -> None:
    run_id = finished_run(ops)
    files = far_tree(ops, run_id, 200)
    growing = ops.far_run_dir(run_id) / "tree" / "d3" / "f0020.bin"
    assert growing.relative_to(ops.far_run_dir(run_id)).as_posix() in files
    dest = ops.tmp / "home"
    stop = threading.Event()

    def keep_growing() -> None:
        with open(growing, "ab") as f:
            while not stop.is_set():
                f.write(b"x")
                f.flush()

    writer = threading.Thread(target=keep_growing)
    writer.start()
    try:
        with pytest.raises(RemoteError) as caught:
            ops.client().request(
                "run/fetch",
                {"host": "plain", "runId": run_id, "path": "tree", "dest": str(dest)},
            )
    finally:
        stop.set()
        writer.join()
    assert caught.value.kind == "transfer_failed", caught.value.message
    assert "changed while fetching" in caught.value.message
    assert not (dest / "tree" / "d3" / "f0020.bin").exists()
    assert no_stream_copies(dest) and partial_records(dest) == []
    assert transfers_running(ops) == []


def test_ctrl_c_during_a_tree_fetch_stops_it_and_the_next_fetch_sends_only_the_rest(
    ops: Ops,
) -> None:
    run_id = finished_run(ops)
    files = far_tree(ops, run_id, 1500)
    total = sum(map(len, files.values()))
    dest = ops.tmp / "home"
    pressed = threading.Event()

    def press_ctrl_c(method: str, params: Any) -> None:
        if method == "$/progress" and params.value.done_bytes > 0 and not pressed.is_set():
            pressed.set()
            raise KeyboardInterrupt

    from rtrain.client.errors import Interrupted

    with pytest.raises(Interrupted) as caught:
        ops.client().request(
            "run/fetch",
            {
                "host": "plain",
                "runId": run_id,
                "path": "tree",
                "dest": str(dest),
                "progressToken": 1,
            },
            on_notification=press_ctrl_c,
            cancel_on_interrupt=True,
        )
    assert caught.value.result is None
    assert transfers_running(ops) == []
    # Whatever is under its name is whole; the copies in flight are gone.
    home = {
        path.relative_to(dest).as_posix(): path.read_bytes()
        for path in dest.rglob("*")
        if path.is_file()
    }
    assert all(files[rel] == data for rel, data in home.items())
    assert no_stream_copies(dest)
    rest = fetch(ops, run_id, "tree", dest)
    for rel, data in files.items():
        assert (dest / rel).read_bytes() == data, rel
    landed = sum(len(files[rel]) for rel in home)
    assert rest.sent_bytes == total - landed
    assert rest.skipped == len(home)


def test_a_tree_comes_home_and_a_code_tree_ships_on_a_host_with_two_sessions(
    ops: Ops, two_sessions: str
) -> None:
    code = ops.tmp / "code"
    for n in range(60):
        (code / f"p{n % 4}").mkdir(parents=True, exist_ok=True)
        (code / f"p{n % 4}" / f"m{n}.py").write_bytes(patterned(n * 101, salt=n))
    started = ops.request(
        "run/start",
        {
            "host": two_sessions,
            "runId": ops.new_run_id(),
            "workdir": ops.workdir,
            "gpus": 0,
            "config": str(ops.file("config.yaml", "epochs: 1\n")),
            "code": str(code),
            "command": ["{python}", "-c", "print(1)"],
        },
    )
    run_id = started.run.run_id
    ops.wait_state(run_id, lambda run: run.state != "running", host=two_sessions)
    files = far_tree(ops, run_id, 300)
    dest = ops.tmp / "home"
    fetch(ops, run_id, "tree", dest, host=two_sessions)
    for rel, data in files.items():
        assert (dest / rel).read_bytes() == data, rel
    for path in code.rglob("*.py"):
        inner = path.relative_to(code)
        assert (ops.far_run_dir(run_id) / inner).read_bytes() == path.read_bytes()


def test_a_full_local_disk_during_a_tree_fetch_is_one_sentence_and_no_file_is_cut(
    ops: Ops, small_local_disk: Path
) -> None:
    run_id = finished_run(ops)
    files = far_tree(ops, run_id, 400)  # about 13 MB into 4 MiB
    error = ops.error(
        "run/fetch",
        {"host": "plain", "runId": run_id, "path": "tree", "dest": str(small_local_disk)},
    )
    assert error.kind == "disk_full", error.message
    assert "local disk is full" in error.message and "nothing was written" in error.message
    # What landed before the disk filled is whole; nothing else is under a name.
    for path in small_local_disk.rglob("*"):
        if path.is_file():
            assert path.read_bytes() == files[path.relative_to(small_local_disk).as_posix()]
    assert no_stream_copies(small_local_disk)
    assert transfers_running(ops) == []
    assert ops.request("daemon/info", {}) is not None
