"""The pool's queue: in the daemon's registry (a restarted daemon still has it, in order),
by priority then first come first served; two daemons racing for the last GPU never both
get it; a queued run can be stopped and removed."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.rtrain_command import Outcome
from tests.pools.conftest import Lab
from tests.second_daemon import second_daemon_env


def fill_box1(lab: Lab) -> str:
    holder = lab.new_run_id("hold")
    assert lab.placed(lab.start(holder)) == "box1"
    return holder


def test_the_queue_goes_by_priority_and_survives_a_daemon_restart(lab: Lab) -> None:
    lab.configure({"lab": ["box1"]})
    holder = fill_box1(lab)
    low, high, later = (lab.new_run_id(n) for n in ("low", "high", "later"))
    for run_id, extra in ((low, ()), (high, ("--priority", "5")), (later, ())):
        queued = lab.start(run_id, *extra)
        assert f"queued {run_id} in @lab" in queued.out, queued
    assert lab.status("@lab", later).endswith("box1 0/1 free; 2 run(s) ahead)")

    assert lab("daemon", "stop").code == 0
    order = [run["runId"] for run in lab.pools()["lab"]["queue"]]  # a new daemon answers
    assert order == [high, low, later]

    lab.finish("box1", holder)
    lab.wait_until(lambda: lab.status("@lab", high) == "running", f"{high} placed first")
    # Its start returned while it waited: where it went and why is told by its status.
    assert "placed on box1: 1 of 1 GPUs free" in lab("status", "@lab", high).err
    assert lab.status("@lab", low).startswith("queued")
    lab.finish("box1", high)
    lab.wait_until(lambda: lab.status("@lab", low) == "running", f"{low} placed next")
    assert lab.status("@lab", later).startswith("queued")


@pytest.fixture
def second_daemon(lab: Lab) -> Iterator[dict[str, str]]:
    """Another laptop of the same user: a daemon of its own, the same hosts and pools."""
    with second_daemon_env(lab.env, lab.cwd) as env:
        yield env


def test_two_starts_racing_for_the_last_gpu_never_both_get_it(
    lab: Lab, second_daemon: dict[str, str]
) -> None:
    lab.configure({"lab": ["box1", "box2"]})
    lab.configure({"lab": ["box1", "box2"]}, Path(second_daemon["XDG_CONFIG_HOME"]))
    taken = lab.new_run_id("taken")
    assert lab.placed(lab.start(taken)) == "box1"  # box2's GPU 1 is the last one free
    first, second = lab.new_run_id("first"), lab.new_run_id("second")
    outcomes: dict[str, Outcome] = {}

    def start(run_id: str, env: dict[str, str]) -> None:
        outcomes[run_id] = lab(
            "start", "@lab", "-c", "cfg.yaml", "--run-id", run_id, "--gpus", "1",
            "--no-follow", "--", "{python}", "-c", "import time; time.sleep(600)",
            env=env,
        )  # fmt: skip

    threads = [
        threading.Thread(target=start, args=(first, lab.env)),
        threading.Thread(target=start, args=(second, second_daemon)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    placed = [o for o in outcomes.values() if "placed on box2: 1 of 2 GPUs free" in o.out]
    queued = [o for o in outcomes.values() if "queued" in o.out and "in @lab" in o.out]
    assert len(placed) == 1 and len(queued) == 1, outcomes
    assert "box1 0/1 free, box2 0/2 free" in queued[0].out, queued
    claims = lab.hosts.home("box2") / ".rtrain-pl" / lab.tag / ".gpus"
    holders = {p.read_text().split()[0] for p in claims.glob("[0-9]*")}
    assert len(holders) == 1 and holders <= {first, second}, holders


def test_a_queued_run_is_stopped_then_removed_leaving_nothing(lab: Lab) -> None:
    lab.configure({"lab": ["box1"]})
    fill_box1(lab)
    run_id = lab.new_run_id("queued")
    assert "queued" in lab.start(run_id).out
    refused = lab("rm", "@lab", run_id)
    assert refused.code != 0 and f"rtrain stop @lab {run_id}" in refused.err, refused
    stopped = lab("stop", "@lab", run_id)
    assert stopped.code == 0, stopped
    assert lab.status("@lab", run_id).startswith("stopped")
    assert lab.pools()["lab"]["queue"] == []
    hosts = [h["alias"] for h in lab("hosts", "--json").json()]
    assert "@lab" not in hosts and "box1" in hosts, hosts  # a pool is no host
    removed = lab("rm", "@lab", run_id)
    assert removed.code == 0, removed
    gone = lab("status", "@lab", run_id)
    assert gone.code != 0 and f"no run {run_id} in the pool lab" in gone.err, gone
    assert not lab.far_run_dir("box1", run_id).exists()
