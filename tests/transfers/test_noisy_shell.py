"""A far user whose ~/.bashrc and ~/.profile print to stdout and stderr for every command (a
lab server's greeting): start, status, tail and fetch all work, byte for byte, from the very
first command of a fresh daemon."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hosts import NOISY_USER
from tests.operations.harness import Ops

HOST = "noisy"


@pytest.fixture
def noisy(ops: Ops) -> Iterator[Path]:
    """The noisy user's copy of this test's workdir (removed afterwards)."""
    far = ops.hosts.home(NOISY_USER) / ".rtrain-t" / ops.tag
    try:
        yield far
    finally:
        shutil.rmtree(far, ignore_errors=True)


def test_every_operation_works_on_a_host_whose_rc_files_print(ops: Ops, noisy: Path) -> None:
    dataset = ops.tmp / "dataset.bin"
    dataset.write_bytes(bytes(range(256)) * 4096 + b"end")
    run_id = ops.new_run_id()
    # The first command of a fresh daemon: no long-lived shell is open yet.
    first = ops.request(
        "run/start",
        {
            "host": HOST,
            "runId": run_id,
            "workdir": ops.workdir,
            "gpus": 0,
            "config": str(ops.file("config.yaml", "epochs: 1\n")),
            "dataset": str(dataset),
            "command": [
                "{python}",
                "-c",
                "import shutil; shutil.copy('dataset.bin', 'copy.bin'); print('trained')",
            ],
        },
    )
    assert first.run.state == "running"
    assert (noisy / run_id / "dataset.bin").read_bytes() == dataset.read_bytes()
    run = ops.wait_state(run_id, lambda run: run.state != "running", host=HOST)
    assert run.state == "completed", run
    tailed, chunks = ops.tail(run_id, host=HOST)
    assert chunks.data == b"trained\n"
    dest = ops.tmp / "home"
    fetched = ops.request(
        "run/fetch", {"host": HOST, "runId": run_id, "path": "copy.bin", "dest": str(dest)}
    )
    assert (dest / "copy.bin").read_bytes() == dataset.read_bytes()
    assert fetched.files[0].sha256 == hashlib.sha256(dataset.read_bytes()).hexdigest()


def test_a_fresh_daemon_tails_a_noisy_host_at_once(ops: Ops, noisy: Path) -> None:
    run_id = ops.new_run_id()
    ops.request(
        "run/start",
        {
            "host": HOST,
            "runId": run_id,
            "workdir": ops.workdir,
            "gpus": 0,
            "config": str(ops.file("config.yaml", "epochs: 1\n")),
            "command": ["{python}", "-c", "print('line one')"],
        },
    )
    ops.wait_state(run_id, lambda run: run.state != "running", host=HOST)
    ops.kill_daemon()
    # The new daemon's first command is this tail, on a channel of its own.
    _tailed, chunks = ops.tail(run_id, host=HOST)
    assert chunks.data == b"line one\n"
    assert ops.status(run_id, host=HOST).state == "completed"
