"""One run across two hosts over plain SSH: torchrun on each node, c10d rendezvous on node 0
(tests/multinode/conftest.py: the plain user and the no-GPU user are the two "hosts")."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import signal
import time
from pathlib import Path

from tests.cli.conftest import WAIT_S, Cli
from tests.hosts import GPU_USER, NOGPU_USER
from tests.operations.processes import run_pids
from tests.torch_python import far_torch_python

HOSTS = "plain,nogpu"
# Each step all-reduces rank+1 over the ranks of every node (gloo, CPU) and keeps a
# checkpoint (the step) in the node's run dir; a run started again resumes from the step all
# nodes reached. `--fail-on TEXT`: the node whose run dir holds TEXT raises after its first
# step (with `--fail-when FILE`, after the first step that finds FILE in its run dir), while
# the other sleeps outside any collective (so it fails of nothing but that) or, with no
# --sleep, is in its next all-reduce (and fails of gloo's lost peer).
TRAINER = """
import argparse, os, sys, time
import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--sleep", type=float, default=0.0)
parser.add_argument("--fail-on", default="")
parser.add_argument("--fail-when", default="")
args = parser.parse_args()
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
print(f"rank {rank} of {world} ready in {os.path.basename(os.path.expanduser('~'))}", flush=True)
done = torch.tensor([0])
if os.path.exists("checkpoint"):
    done = torch.tensor([int(open("checkpoint").read())])
dist.all_reduce(done, op=dist.ReduceOp.MIN)
start = int(done.item())
if start and rank == 0:
    print(f"resuming from step {start}", flush=True)
for step in range(start + 1, args.steps + 1):
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    if rank == 0:
        print(f"step {step} | sum {total.item():.1f} | world {world}", flush=True)
    with open("checkpoint.tmp", "w") as f:
        f.write(str(step))
    os.replace("checkpoint.tmp", "checkpoint")
    if args.fail_on and args.fail_on in os.getcwd():
        if not args.fail_when or os.path.exists(args.fail_when):
            raise ValueError(f"rank {rank} ran out of patience")
    time.sleep(args.sleep)
dist.destroy_process_group()
if rank == 0:
    print("done", flush=True)
"""


def start_across(cli: Cli, run_id: str, *args: str, hosts: str = HOSTS, **options: str) -> None:
    """A start of TRAINER across `hosts`, with the suite's torch python on every node unless
    `python=""` leaves it to each host's config.toml."""
    cli.file("allreduce.py", TRAINER)
    options.setdefault("python", far_torch_python())
    if not options["python"]:
        del options["python"]
    cli.start(
        run_id,
        "{torchrun}", "allreduce.py", *args,
        host=hosts, nodes="2", gpus="1", code=str(cli.cwd), **options,
    )  # fmt: skip


def logs(cli: Cli, run_id: str) -> str:
    """Both nodes' logs: torchrun's c10d rendezvous numbers the nodes itself (by address,
    then pid), so global rank 0, the one that prints, may be on either."""
    paths = (cli.far_run_dir(run_id) / "train.log", second_run_dir(cli, run_id) / "train.log")
    return "\n---\n".join(p.read_text(errors="replace") if p.exists() else "" for p in paths)


def wait_log(cli: Cli, run_id: str, text: str) -> None:
    """Wait for `text` in a node's log; torch starting on a busy machine takes a while, so
    longer than the suite's usual wait. Says both logs and the status when it never comes."""
    deadline = time.monotonic() + WAIT_S * 4
    while text not in logs(cli, run_id):
        if time.monotonic() > deadline:
            status = cli("status", "plain", run_id).out
            raise AssertionError(f"{text!r} never came: {status}\n{logs(cli, run_id)}")
        time.sleep(0.1)


def second_run_dir(cli: Cli, run_id: str) -> Path:
    return cli.hosts.home(NOGPU_USER) / ".rtrain-cli" / cli.tag / run_id


def wait_status(cli: Cli, run_id: str, prefix: str) -> str:
    """`rtrain status plain RUN` once it starts with `prefix` (the run's state)."""
    deadline = time.monotonic() + WAIT_S * 2
    while True:
        out = cli("status", "plain", run_id).out.strip()
        if out.startswith(prefix):
            return out
        assert time.monotonic() < deadline, f"{run_id} never became {prefix!r}: {out}"
        time.sleep(0.3)


def test_two_nodes_all_reduce_and_complete(two_hosts: Cli) -> None:
    cli = two_hosts
    run_id = cli.new_run_id("nodes")
    start_across(cli, run_id)
    assert wait_status(cli, run_id, "completed") == "completed"
    # One rank on each node: 1 + 2 over both nodes.
    assert "step 3 | sum 3.0 | world 2" in logs(cli, run_id)
    assert (second_run_dir(cli, run_id) / "checkpoint").read_text() == "3"
    assert run_pids(run_id) == []
    # Each node's relay tags a rank's lines with its global rank, as torch's own lines do.
    ready = re.findall(r"^\[rank(\d+)\]: rank (\d+) of 2 ready", logs(cli, run_id), re.M)
    assert sorted(ready) == [("0", "0"), ("1", "1")], logs(cli, run_id)

    # tail: every node's lines behind its node, or one node's log as it is.
    both = cli("tail", "plain", run_id, "--no-follow")
    assert both.code == 0, both
    assert any(
        line.startswith("[node ") and "step 3 | sum 3.0" in line for line in both.out_lines
    ), both
    assert any(
        line.startswith("[node 0] ") and f"ready in {GPU_USER}" in line for line in both.out_lines
    ), both
    assert any(
        line.startswith("[node 1] ") and f"ready in {NOGPU_USER}" in line for line in both.out_lines
    ), both
    second = cli("tail", "plain", run_id, "--node", "1", "--no-follow")
    assert second.code == 0 and f"ready in {NOGPU_USER}" in second.out, second
    assert "[node" not in second.out and f"ready in {GPU_USER}" not in second.out, second
    # fetch: node 0 unless told.
    for node, expected in (("0", "GPU"), ("1", "NOGPU")):
        into = cli.cwd / f"from-{node}"
        got = cli("fetch", "plain", run_id, "train.log", "--node", node, "-o", str(into))
        assert got.code == 0, got
        text = (into / "train.log").read_text()
        assert f"ready in rtrain-{expected.lower()}" in text, text
    assert cli("tail", "plain", run_id, "--node", "2").code != 0


def test_one_node_failing_fails_the_run_naming_node_and_rank_and_leaves_no_rank(
    two_hosts: Cli,
) -> None:
    cli = two_hosts
    run_id = cli.new_run_id("fails")
    start_across(cli, run_id, "--steps", "2", "--sleep", "60", "--fail-on", NOGPU_USER)
    out = wait_status(cli, run_id, "failed")
    # The rank is the global one torchrun gave the node's rank (it numbers nodes itself).
    assert re.search(r"node 1 \(nogpu\), rank [01]: ValueError: rank [01] ran out", out), out
    assert "ValueError: rank" in out and "ran out of patience" in out, out
    assert run_pids(run_id) == []  # node 0's rank was taken down with it


def test_each_node_runs_its_own_python_from_config_toml_with_its_home_expanded(
    two_hosts: Cli,
) -> None:
    """Each host's `python` in config.toml is a `~/` path that exists only in that host's
    home: node 1 runs its own (not node 0's), and `~` is expanded for torchrun under the
    relay too (it runs the python twice)."""
    cli = two_hosts
    lines = []
    for host, user, name in (("plain", GPU_USER, "py0"), ("nogpu", NOGPU_USER, "py1")):
        home = cli.hosts.home(user)
        account = home.stat()
        place = home / ".rtrain-cli" / cli.tag / name
        place.mkdir(parents=True)
        # A launcher of the venv's python (a link would lose the venv: it finds pyvenv.cfg
        # beside the path it was started by).
        (place / "python").write_text(f'#!/bin/sh\nexec {far_torch_python()} "$@"\n')
        (place / "python").chmod(0o755)
        for path in (place.parent.parent, place.parent, place, place / "python"):
            os.chown(path, account.st_uid, account.st_gid)
        lines.append(f'[hosts.{host}]\npython = "~/.rtrain-cli/{cli.tag}/{name}/python"\n')
    (cli.daemon.config / "rtrain").mkdir(parents=True, exist_ok=True)
    (cli.daemon.config / "rtrain" / "config.toml").write_text("".join(lines))
    run_id = cli.new_run_id("pythons")
    start_across(cli, run_id, python="")
    assert wait_status(cli, run_id, "completed") == "completed", logs(cli, run_id)
    assert "step 3 | sum 3.0 | world 2" in logs(cli, run_id)
    ran = json.loads((second_run_dir(cli, run_id) / "meta.json").read_text())["command"]
    assert any(word.endswith(f"/{cli.tag}/py1/python") for word in ran), ran
    assert not any("/py0/" in word for word in ran), ran


def test_stop_takes_every_node_down(two_hosts: Cli) -> None:
    cli = two_hosts
    run_id = cli.new_run_id("stop")
    start_across(cli, run_id, "--steps", "100000", "--sleep", "0.1")
    wait_log(cli, run_id, "step 3 |")
    assert (second_run_dir(cli, run_id) / "checkpoint").exists()
    stopped = cli("stop", "plain", run_id)
    assert (stopped.code, stopped.out) == (0, f"stopped {run_id} on plain\n"), stopped
    assert run_pids(run_id) == []
    assert cli("status", "plain", run_id).out == "stopped\n"

    # restart: every node again, as attempt 2, resuming from the step both nodes reached.
    again = cli("restart", "plain", run_id, "--no-follow")
    assert again.code == 0, again
    wait_log(cli, run_id, "resuming from step")
    second_log = second_run_dir(cli, run_id) / "train.log"
    assert f"attempt 2 of {run_id}" in second_log.read_text()
    assert cli("stop", "plain", run_id).code == 0
    assert run_pids(run_id) == []


def kill_node_session(cli: Cli, run_id: str, user: str) -> None:
    """kill -9 every process of the run that `user` (one node's far user) owns, in rounds."""
    uid = pwd.getpwnam(user).pw_uid

    def owned() -> list[int]:
        return [pid for pid in run_pids(run_id) if os.stat(f"/proc/{pid}").st_uid == uid]

    while pids := owned():
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_node_killed_loses_the_run_and_retry_brings_every_node_back_resuming(
    two_hosts: Cli,
) -> None:
    cli = two_hosts
    run_id = cli.new_run_id("retry")
    start_across(cli, run_id, "--steps", "100000", "--sleep", "0.2", retry="1")
    wait_log(cli, run_id, "step 4 |")
    kill_node_session(cli, run_id, NOGPU_USER)
    deadline = time.monotonic() + WAIT_S * 3
    while True:
        run = json.loads(cli("status", "plain", run_id, "--json").out)
        if len(run.get("attempts", [])) == 2 and run["state"] == "running":
            break
        assert time.monotonic() < deadline, f"never came back: {run}"
        time.sleep(0.3)
    first, second = run["attempts"]
    assert first["state"] == "lost" and "node 1 (nogpu)" in first["reason"], first
    assert second["cause"].startswith("retry 1 of 1: attempt 1 ended lost"), second
    wait_log(cli, run_id, "resuming from step")
    log = logs(cli, run_id)
    resumed = int(log.split("resuming from step ")[1].split()[0])
    assert resumed >= 4, log
    wait_log(cli, run_id, f"step {resumed + 2} |")  # both nodes all-reduce again
    assert cli("stop", "plain", run_id).code == 0
    assert run_pids(run_id) == []
