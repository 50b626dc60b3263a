"""A run across hosts while one node does not answer (its SSH route stalls: a TcpProxy in
front of it). A stop: every node that answers is stopped at once, the silent one is named
and its stop stays pending, in the registry, until it answers again; the run is never said
stopped before that. A failure: once the node answers, the node that failed first is named,
not the one whose ranks lost their peer."""

from __future__ import annotations

import os
import pwd
import re
import time
from collections.abc import Iterator

import pytest

from tests.cli.conftest import WAIT_S, Cli
from tests.hosts import GPU_USER, NOGPU_USER, TcpProxy
from tests.multinode.test_across_hosts import (
    logs,
    second_run_dir,
    start_across,
    wait_log,
    wait_status,
)
from tests.operations.processes import run_pids

AWAY_NODE = "awaynode"


@pytest.fixture
def away_node(two_hosts: Cli) -> Iterator[TcpProxy]:
    """The second node's user reached through a proxy the test can stall."""
    proxy = TcpProxy(two_hosts.hosts.plain_port)
    two_hosts.hosts.add_alias(AWAY_NODE, proxy.port, user=NOGPU_USER)
    try:
        yield proxy
    finally:
        proxy.close()


def owned_by(run_id: str, user: str) -> list[int]:
    uid = pwd.getpwnam(user).pw_uid
    found = []
    for pid in run_pids(run_id):
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                found.append(pid)
        except FileNotFoundError:
            continue
    return found


def test_stop_with_a_node_away_stops_the_others_and_finishes_when_it_answers(
    two_hosts: Cli, away_node: TcpProxy
) -> None:
    cli = two_hosts
    run_id = cli.new_run_id("away")
    start_across(cli, run_id, "--steps", "100000", "--sleep", "0.1", hosts=f"plain,{AWAY_NODE}")
    wait_log(cli, run_id, "step 3 |")
    assert owned_by(run_id, NOGPU_USER), "node 1 never ran"

    away_node.stall()
    stopped = cli("stop", "plain", run_id)
    # Not stopped: node 1 may still train. The answer names it and says what happens next.
    assert stopped.code != 0, stopped
    assert "not stopped yet" in stopped.err and f"node 1 ({AWAY_NODE})" in stopped.err, stopped
    assert "stops the rest as soon as they answer" in stopped.err, stopped
    # Node 0 was stopped all the same, and at once, not after node 1's silence.
    assert owned_by(run_id, GPU_USER) == []
    status = cli("status", "plain", run_id)
    assert status.out.startswith("unknown (stop pending: "), status
    assert f"node 1 ({AWAY_NODE})" in status.out, status

    # The pending stop is the registry's: a new daemon finishes it once node 1 answers.
    assert cli("daemon", "stop").code == 0
    away_node.resume()
    deadline = time.monotonic() + WAIT_S * 3
    while (out := cli("status", "plain", run_id).out) != "stopped\n":
        assert time.monotonic() < deadline, f"the pending stop never finished: {out}"
        time.sleep(0.3)
    assert run_pids(run_id) == []


def test_the_node_that_failed_first_is_named_not_the_one_that_lost_its_peer(
    two_hosts: Cli, away_node: TcpProxy
) -> None:
    """Both nodes have failed by the time the daemon looks (node 1's SSH route stalled
    meanwhile): node 1 raised, node 0's rank lost its peer in the all-reduce a moment
    later. The reason names node 1 and its exception, whatever the order of the nodes."""
    cli = two_hosts
    run_id = cli.new_run_id("blame")
    start_across(
        cli, run_id, "--steps", "100000", "--fail-on", NOGPU_USER, "--fail-when", "fail-now",
        hosts=f"plain,{AWAY_NODE}",
    )  # fmt: skip
    wait_log(cli, run_id, "step 3 |")
    away_node.stall()
    (second_run_dir(cli, run_id) / "fail-now").touch()
    deadline = time.monotonic() + WAIT_S * 2
    # rtrain keeps a run's exit status in its private .rtrain/ (a trainer's own `status`
    # never counts).
    status_files = [
        cli.far_run_dir(run_id) / ".rtrain" / "status",
        second_run_dir(cli, run_id) / ".rtrain" / "status",
    ]
    while not all(path.exists() for path in status_files):
        assert time.monotonic() < deadline, f"the nodes never ended: {logs(cli, run_id)}"
        time.sleep(0.1)
    # Node 0 failed of its lost peer, on its own.
    assert (cli.far_run_dir(run_id) / ".rtrain" / "rank_failure").exists()
    away_node.resume()
    out = wait_status(cli, run_id, "failed")
    assert re.search(r"node 1 \(awaynode\), rank [01]: ValueError: rank [01] ran out", out), out
    assert "node 0 failed too" in out, out
    assert run_pids(run_id) == []
    # The far side recorded when node 1's first failing rank failed (rank_failure's time).
    text = (second_run_dir(cli, run_id) / ".rtrain" / "rank_failure").read_text()
    fields = text.rstrip("\n").split("\t")
    assert len(fields) == 7 and abs(float(fields[6]) - time.time()) < 600, fields


AWAY_FIRST = "awayfirst"


@pytest.fixture
def away_first_node(two_hosts: Cli) -> Iterator[TcpProxy]:
    """The FIRST node's user (where the run is recorded) reached through a proxy the test
    can stall."""
    proxy = TcpProxy(two_hosts.hosts.plain_port)
    two_hosts.hosts.add_alias(AWAY_FIRST, proxy.port, user=GPU_USER)
    try:
        yield proxy
    finally:
        proxy.close()


def test_stop_with_node_0_away_stops_node_1_and_finishes_when_node_0_answers(
    two_hosts: Cli, away_first_node: TcpProxy
) -> None:
    """Node 0 is where the run is recorded (its meta.json, the registry's row): its silence
    keeps node 1 from nothing, and its own stop is finished once it answers."""
    cli = two_hosts
    run_id = cli.new_run_id("away0")
    start_across(cli, run_id, "--steps", "100000", "--sleep", "0.1", hosts=f"{AWAY_FIRST},nogpu")
    wait_log(cli, run_id, "step 3 |")
    assert owned_by(run_id, GPU_USER) and owned_by(run_id, NOGPU_USER), "a node never ran"

    away_first_node.stall()
    stopped = cli("stop", AWAY_FIRST, run_id)
    assert stopped.code != 0, stopped
    assert "not stopped yet" in stopped.err and f"node 0 ({AWAY_FIRST})" in stopped.err, stopped
    assert "stops the rest as soon as they answer" in stopped.err, stopped
    # Node 1 was stopped at once, not after node 0's silence (node 0's ranks then fail of
    # their lost peer by themselves: whether they are gone yet is not the stop's doing).
    assert owned_by(run_id, NOGPU_USER) == []
    status = cli("status", AWAY_FIRST, run_id)
    assert status.out.startswith("unknown (stop pending: "), status
    assert f"node 0 ({AWAY_FIRST})" in status.out, status

    away_first_node.resume()
    deadline = time.monotonic() + WAIT_S * 3
    while (out := cli("status", AWAY_FIRST, run_id).out) != "stopped\n":
        assert time.monotonic() < deadline, f"the pending stop never finished: {out}"
        time.sleep(0.3)
    assert run_pids(run_id) == []
