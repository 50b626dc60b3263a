"""A run across hosts whose global rank 0 lands on node 1 (torchrun's c10d rendezvous numbers
the nodes itself: by address, then by the agent's pid): its metrics, progress and loss come
from node 1's log, where rank 0 printed them."""

from __future__ import annotations

import os
import re
import time

from tests.cli.conftest import WAIT_S, Cli
from tests.hosts import GPU_USER
from tests.multinode.test_across_hosts import logs, second_run_dir, wait_status
from tests.torch_python import far_torch_python

# Global rank 0 alone prints, as most trainers do.
RANK0_TRAINER = """
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
for step in range(1, 6):
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    if rank == 0:
        print(f"step {step} | loss {1.0 / step:.4f}", flush=True)
dist.destroy_process_group()
"""


def late_python(cli: Cli, user: str, name: str, delay: float) -> str:
    """A python for `user` that starts `delay` seconds late, in that user's home: node 0's
    torchrun agent then starts (gets its pid) after node 1's, and c10d gives node 1 rank 0."""
    home = cli.hosts.home(user)
    account = home.stat()
    place = home / ".rtrain-cli" / cli.tag / name
    place.mkdir(parents=True, exist_ok=True)
    (place / "python").write_text(f'#!/bin/sh\nsleep {delay}\nexec {far_torch_python()} "$@"\n')
    (place / "python").chmod(0o755)
    for path in (place.parent.parent, place.parent, place, place / "python"):
        os.chown(path, account.st_uid, account.st_gid)
    return str(place / "python")


def test_metrics_come_from_the_node_where_global_rank_0_ran(two_hosts: Cli) -> None:
    cli = two_hosts
    slow = late_python(cli, GPU_USER, "late", 3)
    (cli.daemon.config / "rtrain").mkdir(parents=True, exist_ok=True)
    (cli.daemon.config / "rtrain" / "config.toml").write_text(
        f'[hosts.plain]\npython = "{slow}"\n[hosts.nogpu]\npython = "{far_torch_python()}"\n'
    )
    cli.file("rank0.py", RANK0_TRAINER)
    run_id = cli.new_run_id("rank0")
    cli.start(
        run_id, "{torchrun}", "rank0.py",
        host="plain,nogpu", nodes="2", gpus="1", code=str(cli.cwd),
    )  # fmt: skip
    assert wait_status(cli, run_id, "completed") == "completed", logs(cli, run_id)
    # The arrangement held: rank 0 ran on node 1, so node 0's log has none of its lines.
    second = (second_run_dir(cli, run_id) / "train.log").read_text()
    assert re.search(r"^\[rank0\]: step 5 \| loss 0\.2000", second, re.M), logs(cli, run_id)
    assert "loss" not in (cli.far_run_dir(run_id) / "train.log").read_text()

    done = cli("metrics", "plain", run_id, "--json")
    assert done.code == 0, done
    rows = [(row["step"], row["loss"]) for row in done.json() if "loss" in row]
    assert rows == [(1, 1.0), (2, 0.5), (3, 0.3333), (4, 0.25), (5, 0.2)], done.json()
    status = cli("status", "plain", run_id, "--json").json()
    assert status["latest"]["loss"] == 0.2, status
    deadline = time.monotonic() + WAIT_S
    while True:  # `runs` shows what the monitor read; it may still be reading
        [row] = [r for r in cli("runs", "--json").json() if r["runId"] == run_id]
        if (row.get("latest") or {}).get("loss") == 0.2:
            break
        assert time.monotonic() < deadline, row
        time.sleep(0.3)
