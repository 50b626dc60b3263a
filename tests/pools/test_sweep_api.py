"""The Python API of sweeps: `rtrain.sweep(...)` starts the runs through the pool, and its
`RemoteSweep` handle waits for them, tells their states, compares them, stops and removes
them, as the CLI does; `rtrain wait --sweep` exits with the worst run's state."""

from __future__ import annotations

import pytest

import rtrain
from tests.pools.conftest import Lab

# A loss curve the log parser reads, ending at 1 + 1/lr; a run with lr=0 fails.
CURVE = (
    "import sys\n"
    "for step in range(1, 4):\n"
    "    print('step %d | loss %.5f' % (step, (4 - step) + 1 / {lr}), flush=True)\n"
)
HOLD = "import os, time\nwhile not os.path.exists('finish'): time.sleep(0.05)\n# {lr}"


def test_a_sweep_through_the_python_api(lab: Lab) -> None:
    lab.configure({"lab": ["box1", "box2", "box3"]})
    name = f"api{lab.tag}"
    swept = rtrain.sweep("@lab", ["{python}", "-c", CURVE], grid={"lr": [1, 4]}, name=name, gpus=0)
    assert swept == rtrain.RemoteSweep(name)
    assert swept.wait(timeout=120) == "completed"
    assert swept.status() == {f"{name}-1": "completed", f"{name}-2": "completed"}
    assert swept.params() == {f"{name}-1": {"lr": "1"}, f"{name}-2": {"lr": "4"}}
    rows = swept.compare(sort="loss")
    assert [row["params"]["lr"] for row in rows] == ["4", "1"]  # lowest loss first
    assert rows[0]["metrics"]["loss"] == {"last": 1.25, "best": 1.25}
    assert sorted(run_id for _, run_id in swept.runs()) == [f"{name}-1", f"{name}-2"]
    assert sorted(swept.remove()) == [f"{name}-1", f"{name}-2"]
    with pytest.raises(rtrain.RunNotFound, match=f"no sweep '{name}'"):
        swept.status()


def test_a_sweep_with_a_failed_run_waits_to_exit_1_and_refuses_bad_points(lab: Lab) -> None:
    lab.configure({"lab": ["box1", "box3"]})
    name = f"bad{lab.tag}"
    swept = rtrain.sweep("@lab", ["{python}", "-c", CURVE], grid={"lr": [0, 2]}, name=name, gpus=0)
    assert swept.wait(timeout=120) == "failed"
    waited = lab("wait", "--sweep", name)
    assert waited.code == 1, waited  # the worst of its runs: one failed
    assert f"{name}-1: failed" in waited.out and f"{name}-2: completed" in waited.out

    with pytest.raises(rtrain.InvalidCommand, match="never uses {lr}"):
        rtrain.sweep("@lab", ["echo", "hello"], grid={"lr": [1, 2]})
    with pytest.raises(rtrain.InvalidCommand, match="value '1;touch x' of lr is not usable"):
        rtrain.sweep("@lab", ["echo", "{lr}"], grid={"lr": ["1;touch x"]})
    listed = sorted(r["runId"] for r in lab("runs", "--json").json())
    assert listed == [f"{name}-1", f"{name}-2"]  # the refused sweeps started nothing


def test_a_stopped_sweep_waits_to_exit_3_and_a_timeout_to_5(lab: Lab) -> None:
    lab.configure({"lab": ["box1"]})
    name = f"stop{lab.tag}"
    swept = rtrain.sweep("@lab", ["{python}", "-c", HOLD], grid={"lr": [1, 2]}, name=name)
    timed_out = lab("wait", "--sweep", name, "--timeout", "1")
    assert timed_out.code == 5 and "2 run(s) not ended; it goes on" in timed_out.err, timed_out
    with pytest.raises(rtrain.RunActive, match=f"rtrain sweep stop {name}"):
        swept.remove()
    assert sorted(swept.stop()) == [f"{name}-1", f"{name}-2"]
    waited = lab("wait", "--sweep", name, "--json")
    assert waited.code == 3, waited
    assert waited.json()["exitCode"] == 3
    assert lab("wait", "--sweep", "nosuch").code == 7
