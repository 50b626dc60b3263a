"""Hosts behind bastions (`ProxyJump`, one hop and a chain of two; `ProxyCommand`; a console
gateway behind one): rtrain reaches them through OpenSSH's own config and does everything it
does on a host in reach. A bastion that drops during a fetch: one sentence, no file under
its final name, and the next fetch completes."""

from __future__ import annotations

import hashlib
import shlex
import time
from pathlib import Path

import pytest

from tests.cli.conftest import WAIT_S, WAITING_TRAINER, Cli
from tests.hosts import GPU_USER, TcpProxy
from tests.hosts.bastions import Bastions

MIB = 2**20
# Writes out.bin: the dataset and its first 2 MiB again (a file of more than one piece).
COPY_TRAINER = """
import sys
data = open(sys.argv[1], "rb").read()
with open("out.bin", "wb") as f:
    f.write(data + data[: 2 * 2**20])
print("step 1 | loss 0.5", flush=True)
"""
# Writes big.bin: 48 MiB that no other file has.
BIG_TRAINER = """
import os
with open("big.bin", "wb") as f:
    for _ in range(48):
        f.write(os.urandom(2**20))
print("step 1 | loss 0.5", flush=True)
"""


def logins_on(jumps: Bastions, number: int) -> int:
    return jumps.log_text(number).count(f"Accepted publickey for {GPU_USER}")


def wait_until(check: object, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(MIB):
            digest.update(chunk)
    return digest.hexdigest()


@pytest.mark.parametrize(
    ("alias", "bastions"),
    [("behind1", (1,)), ("behind2", (1, 2)), ("behindcommand", (1,))],
    ids=["ProxyJump one hop", "ProxyJump two hops", "ProxyCommand"],
)
def test_a_host_behind_bastions_trains_and_hands_back(
    cli: Cli, jumps: Bastions, alias: str, bastions: tuple[int, ...]
) -> None:
    before = {number: logins_on(jumps, number) for number in (1, 2)}
    ready = cli("preflight", alias, "--gpus", "0", "--workdir", cli.workdir)
    assert ready.code == 0 and f"{alias} is ready to train" in ready.out, ready
    # The connection went through each bastion on the way, and through no other.
    for number in (1, 2):
        assert (logins_on(jumps, number) > before[number]) == (number in bastions), number

    dataset = cli.cwd / "data.bin"
    dataset.write_bytes(hashlib.sha256(alias.encode()).digest() * (18 * MIB // 32))
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", COPY_TRAINER, "{dataset}", host=alias, dataset="data.bin")
    cli.wait_state(alias, run_id, "completed")
    fetched = cli("fetch", alias, run_id, "out.bin", "--out", "got")
    assert fetched.code == 0, fetched
    got = (cli.cwd / "got" / "out.bin").read_bytes()
    data = dataset.read_bytes()
    assert got == data + data[: 2 * MIB]

    waiting = cli.new_run_id("waits")
    cli.start(waiting, "{python}", "-c", WAITING_TRAINER, host=alias)
    cli.wait_state(alias, waiting, "running")
    stopped = cli("stop", alias, waiting)
    assert stopped.code == 0, stopped
    cli.wait_state(alias, waiting, "stopped")


def test_the_console_transport_behind_a_bastion(cli: Cli, jumps: Bastions) -> None:
    alias = "consolebehind"
    ready = cli("preflight", alias, "--gpus", "0", "--workdir", cli.workdir, "--json")
    assert ready.code == 0, ready
    assert ready.json()["transport"] == "console"
    dataset = cli.file("data.txt", "row\n" * 50_000)
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", COPY_TRAINER, "{dataset}", host=alias, dataset="data.txt")
    cli.wait_state(alias, run_id, "completed")
    fetched = cli("fetch", alias, run_id, "out.bin", "--out", "got")
    assert fetched.code == 0, fetched
    data = dataset.read_bytes()
    assert (cli.cwd / "got" / "out.bin").read_bytes() == data + data[: 2 * MIB]

    waiting = cli.new_run_id("waits")
    cli.start(waiting, "{python}", "-c", WAITING_TRAINER, host=alias)
    cli.wait_state(alias, waiting, "running")
    assert cli("stop", alias, waiting).code == 0
    cli.wait_state(alias, waiting, "stopped")


def test_the_guard_and_terminate_through_a_bastion(cli: Cli, jumps: Bastions) -> None:
    calls = cli.far_workdir / "calls"
    command = f"echo fired >> {shlex.quote(str(calls))}; echo done"
    guard = ["guard", "behind1", "--workdir", cli.workdir]
    try:
        armed = cli(*guard, "--idle", "2s", "--then", command, "--ignore-sessions")
        assert armed.code == 0 and "armed: after 2s idle" in armed.out, armed
        wait_until(lambda: calls.exists() and calls.read_text() == "fired\n", "the guard to fire")
        assert cli(*guard, "--idle", "10m", "--then", command).code == 0
        ended = cli("terminate", "behind1", "--yes", "--workdir", cli.workdir)
        assert (ended.code, ended.out) == (0, "done\n"), ended
        assert calls.read_text() == "fired\nfired\n"
    finally:
        cli(*guard, "--off")


def test_a_bastion_that_drops_mid_fetch(cli: Cli, jumps: Bastions) -> None:
    # A slow link to the bastion, so the fetch is surely under way when the bastion drops.
    with TcpProxy(jumps.first.port, delay_s=0.02) as link:
        cli.hosts.add_alias("slowjump", link.port, GPU_USER)
        cli.hosts.add_alias("behindslow", cli.hosts.plain_port, GPU_USER, {"ProxyJump": "slowjump"})
        run_id = cli.new_run_id()
        cli.start(run_id, "{python}", "-c", BIG_TRAINER, host="behindslow")
        cli.wait_state("behindslow", run_id, "completed")
        far = cli.far_run_dir(run_id) / "big.bin"
        dest = cli.cwd / "got"
        fetching = cli.spawn("fetch", "behindslow", run_id, "big.bin", "--out", str(dest))
        partial = dest / ".rtrain-partial"
        wait_until(lambda: partial.is_dir() and any(partial.glob("big.bin.*.part")), "a piece")
        link.stall()
        jumps.drop_sessions(1)
        link.resume()
        failed = fetching.finish()
        assert failed.code == 1, failed
        assert failed.err.startswith("rtrain: host unreachable: behindslow"), failed
        assert len(failed.err_lines) == 1, failed
        assert not (dest / "big.bin").exists()

        again = cli("fetch", "behindslow", run_id, "big.bin", "--out", str(dest))
        assert again.code == 0, again
        assert sha256(dest / "big.bin") == sha256(far)
        assert not partial.exists()
