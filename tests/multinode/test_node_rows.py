"""The nodes launcher's pure parts: a run's state from its nodes' rows, and the rendezvous
words a launch adds and a later attempt takes out again."""

from __future__ import annotations

from typing import Literal

from rtrain.daemon.launchers.nodes.launcher import combined, rendezvous, standalone
from rtrain.daemon.remote.contract.run_scripts import RunRow, run_row
from rtrain.protocol.messages import RunNode

RowState = Literal[
    "queued", "running", "completed", "failed", "stopped", "lost", "unknown", "missing"
]

NODES = [RunNode(host="h1", remote_dir="/a/r"), RunNode(host="h2", remote_dir="/b/r")]


def row(state: RowState, detail: str | None = None, exit_code: int | None = None) -> RunRow:
    return RunRow(run_id="r", state=state, detail=detail, exit_code=exit_code, started_at=5.0)


def test_running_while_every_node_runs_completed_once_all_completed() -> None:
    assert combined("r", NODES, [row("running"), row("running")]).state == "running"
    waiting = combined("r", NODES, [row("running"), row("completed")])
    assert waiting.state == "running" and waiting.detail is not None
    assert combined("r", NODES, [row("completed"), row("completed")]).state == "completed"


def test_a_failure_names_its_node_and_rank() -> None:
    ended = combined(
        "r", NODES, [row("stopped"), row("failed", "rank 0: ValueError: no", exit_code=1)]
    )
    assert (ended.state, ended.exit_code) == ("failed", 1)
    assert ended.detail == "node 1 (h2), rank 0: ValueError: no"


def test_a_lost_node_explains_the_others_failing_after_it() -> None:
    ended = combined("r", NODES, [row("failed", "Connection closed by peer"), row("lost")])
    assert ended.state == "lost" and ended.detail is not None
    assert ended.detail.startswith("node 1 (h2)")


def test_a_limit_stop_keeps_its_typed_fields_for_the_daemon() -> None:
    limited = run_row(["r", "stopped", "-", "-", "5", "limit: max_duration 60"])
    ended = combined("r", NODES, [limited, row("stopped")])
    assert (ended.state, ended.detail) == ("stopped", "limit: max_duration 60")
    assert (ended.stopped_by, ended.limit_seconds, ended.ending) == (
        "max_duration",
        60,
        "max_duration",
    )


def test_node_0_gone_is_the_run_gone_and_another_gone_is_lost() -> None:
    assert combined("r", NODES, [row("missing"), row("running")]).state == "missing"
    assert combined("r", NODES, [row("running"), row("missing")]).state == "lost"


def test_rendezvous_words_come_out_again_for_the_next_attempt() -> None:
    command = ["py", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", "t.py"]
    launched = rendezvous(command, 2, "10.0.0.1:4000", "r", host=True)
    assert "--standalone" not in launched
    assert "--rdzv-endpoint=10.0.0.1:4000" in launched and "--rdzv-conf=is_host=1" in launched
    assert launched[-2:] == ["--nproc-per-node=2", "t.py"]
    assert standalone(launched) == command


def test_the_relay_finds_a_rank_by_its_number_on_its_own_node() -> None:
    from rtrain.daemon.remote.rank_lines import summary_failures

    summary = """Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-04_23:59:01
  host      : box
  rank      : 1 (local_rank: 0)
  exitcode  : 1 (pid: 4242)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""
    [failure] = summary_failures(summary)
    assert (failure["rank"], failure["local"], failure["pid"]) == ("1", "0", "4242")


def failed(detail: str, at: float | None = None) -> RunRow:
    return RunRow(run_id="r", state="failed", detail=detail, exit_code=1, failed_at=at)


def test_a_lost_peer_is_a_consequence_and_the_first_failure_in_time_is_named() -> None:
    peer = "rank 0: RuntimeError: [gloo/transport/tcp/pair.cc:534] Connection closed by peer"
    own = "rank 1: ValueError: rank 1 ran out of patience"
    # The peer-lost node failed earlier by its clock, and is first in the list: not blamed.
    ended = combined("r", NODES, [failed(peer, 10.0), failed(own, 11.0)])
    assert ended.detail == f"node 1 (h2), {own}; node 0 failed too", ended
    nccl = (
        "rank 2: DistBackendError: NCCL error: remote process exited or there was a network error"
    )
    ended = combined("r", NODES, [failed(nccl), failed(own)])
    assert ended.detail is not None and ended.detail.startswith("node 1 (h2), rank 1: Value")
    # Two failures of their own: the earlier one by the far side's times, whatever the order.
    ended = combined("r", NODES, [failed("rank 0: KeyError: x", 12.5), failed(own, 12.25)])
    assert ended.detail is not None and ended.detail.startswith("node 1 (h2)"), ended
    ended = combined("r", NODES, [failed("rank 0: KeyError: x", 12.0), failed(own, 12.25)])
    assert ended.detail is not None and ended.detail.startswith("node 0 (h1)"), ended


def test_the_run_line_carries_the_first_failing_ranks_time() -> None:
    from rtrain.daemon.remote.contract.run_scripts import run_row

    line = ["r", "failed", "1", "-", "5", "rank 0: ValueError: x", "-", "1765000000.125"]
    assert run_row(line).failed_at == 1765000000.125
    assert run_row(line[:7]).failed_at is None
