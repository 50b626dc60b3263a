"""On a host whose rc files print to stdout and stderr for every command, a code tree ships
in its stream and a tree of files comes home in its streams, byte for byte: the noise never
becomes part of a file."""

from __future__ import annotations

from pathlib import Path

from tests.operations.harness import Ops
from tests.transfers.test_engine import patterned
from tests.transfers.test_noisy_shell import HOST, noisy

__all__ = ["noisy"]


def test_trees_move_both_ways_on_a_noisy_host(ops: Ops, noisy: Path) -> None:
    code = ops.tmp / "code"
    files = {f"p{n % 3}/m{n:02d}.bin": patterned(n * 97, salt=n) for n in range(40)}
    for rel, data in files.items():
        (code / rel).parent.mkdir(parents=True, exist_ok=True)
        (code / rel).write_bytes(data)
    run_id = ops.new_run_id()
    ops.request(
        "run/start",
        {
            "host": HOST,
            "runId": run_id,
            "workdir": ops.workdir,
            "gpus": 0,
            "config": str(ops.file("config.yaml", "epochs: 1\n")),
            "code": str(code),
            "command": ["{python}", "-c", "import shutil; shutil.copytree('p1', 'out/p1')"],
        },
    )
    for rel, data in files.items():
        assert (noisy / run_id / rel).read_bytes() == data, rel
    run = ops.wait_state(run_id, lambda run: run.state != "running", host=HOST)
    assert run.state == "completed", run
    dest = ops.tmp / "home"
    fetched = ops.request(
        "run/fetch", {"host": HOST, "runId": run_id, "path": ".", "dest": str(dest)}
    )
    for rel, data in files.items():
        assert (dest / rel).read_bytes() == data, rel
        if rel.startswith("p1/"):
            assert (dest / "out" / rel).read_bytes() == data, rel
    assert fetched.sent_bytes > 0
