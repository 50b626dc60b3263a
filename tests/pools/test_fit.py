"""A pool's placement asks each host whether it can run this run (fit.sh): a host whose
python lacks what the run needs is skipped, with the reason in the placement line, and the
run goes to the next host; a pool where no host can run it refuses the start. Among the
hosts that can, the one with the run's environment built goes first."""

from __future__ import annotations

import time

from tests.cli.rtrain_command import Outcome
from tests.pools.conftest import Lab
from tests.torch_python import far_torch_python

# An environment is a venv and a pip install from the index: seconds, many more under load.
BUILD_WAIT_S = 240.0
# Prints that it ran under torchrun (torchrun sets LOCAL_RANK), then ends.
UNDER_TORCHRUN = "import os\nprint('rank', os.environ['LOCAL_RANK'], flush=True)\n"


def _configure(lab: Lab, pools: dict[str, list[str]], pythons: dict[str, str]) -> None:
    lab.configure(pools)
    config = lab.daemon.config / "rtrain" / "config.toml"
    text = config.read_text()
    for alias, python in pythons.items():
        text = text.replace(f"[hosts.{alias}]", f'[hosts.{alias}]\npython = "{python}"')
    config.write_text(text)


def _torchrun_start(lab: Lab, run_id: str, where: str) -> Outcome:
    code = lab.cwd / "code"
    code.mkdir(exist_ok=True)
    (code / "train.py").write_text(UNDER_TORCHRUN)
    return lab(
        "start", where, "--run-id", run_id, "--gpus", "1", "--code", str(code),
        "--no-follow", "--", "{torchrun}", "train.py",
    )  # fmt: skip


def test_a_host_whose_python_lacks_torch_is_skipped_with_the_reason(lab: Lab) -> None:
    # box1 comes first in the pool and is the least loaded, but its python3 has no torch.
    _configure(lab, {"lab": ["box1", "box3"], "solo": ["box1"]}, {"box3": far_torch_python()})
    run_id = lab.new_run_id("torch")
    started = _torchrun_start(lab, run_id, "@lab")
    assert started.code == 0, started
    out = started.out
    assert "placed on box3: 2 of 2 GPUs free; box1 cannot run it: python3 has no torch" in out
    log = lab.far_run_dir("box3", run_id) / "train.log"
    lab.wait_until(lambda: log.exists() and "rank 0" in log.read_text(), "rank 0 in the log")
    assert not (lab.far_run_dir("box1", run_id)).exists()

    # A run no host of its pool can run is refused, not queued for ever.
    refused = _torchrun_start(lab, lab.new_run_id("never"), "@solo")
    assert refused.code != 0, refused
    assert "no host of solo can run" in refused.err, refused
    assert "box1: python3 has no torch); nothing was started" in refused.err
    assert lab.pools()["solo"]["queue"] == []


def test_a_host_whose_python_is_missing_is_skipped(lab: Lab) -> None:
    _configure(lab, {"lab": ["box1", "box3"]}, {"box1": "/nonexistent/python3"})
    started = lab.start(lab.new_run_id())
    assert started.code == 0, started
    assert (
        "placed on box3: 2 of 2 GPUs free; box1 cannot run it: /nonexistent/python3 is not found"
        in started.out
    ), started


def test_the_host_with_the_environment_built_goes_first(lab: Lab) -> None:
    lab.configure({"lab": ["box1", "box3"]})
    lock = lab.cwd / "requirements.txt"
    lock.write_text("termcolor\n")
    first = lab.new_run_id("build")
    built = lab.start(first, "--requirements", str(lock), where="box3", gpus=0)
    assert built.code == 0, built
    lab.finish("box3", first)
    deadline = time.monotonic() + BUILD_WAIT_S
    while (state := lab.status("box3", first)) != "completed":
        assert time.monotonic() < deadline and state.split(" ")[0] != "failed", state
        time.sleep(0.5)

    # box1 (1 of 1 free) ties with box3 (2 of 2) and comes first in the pool, but box3 has
    # the environment (and no input: the config changed).
    (lab.cwd / "cfg.yaml").write_text("steps: 2\n")
    again = lab.start(lab.new_run_id("again"), "--requirements", str(lock))
    assert "placed on box3: 2 of 2 GPUs free, environment built" in again.out, again
    # Still before the less loaded box1: a build takes longer than a shared box.
    other = lab.start(lab.new_run_id("other"), "--requirements", str(lock))
    assert "placed on box3: 1 of 2 GPUs free, inputs cached, environment built" in other.out, other


def test_a_queued_run_goes_to_the_host_that_can_run_it_when_gpus_free(lab: Lab) -> None:
    # box3's GPUs are taken; box1's GPU is free, but box1 has no torch for a torchrun run.
    _configure(lab, {"lab": ["box1", "box3"]}, {"box3": far_torch_python()})
    holder = lab.new_run_id("holder")
    assert lab.start(holder, where="box3", gpus=2).code == 0
    run_id = lab.new_run_id("torch")
    queued = _torchrun_start(lab, run_id, "@lab")
    assert queued.code == 0, queued
    assert (
        "waiting for 1 GPU in lab: box1 cannot run it (python3 has no torch), box3 0/2 free"
        in queued.out
    ), queued

    lab.finish("box3", holder)  # box3's GPUs free: the queued run goes there, never to box1
    log = lab.far_run_dir("box3", run_id) / "train.log"
    lab.wait_until(lambda: log.exists() and "rank 0" in log.read_text(), "rank 0 on box3")
    assert not lab.far_run_dir("box1", run_id).exists()
    assert lab("status", "box3", run_id, "--json").json()["pool"] == "@lab"


def test_an_image_no_host_holds_is_refused_before_anything_runs(lab: Lab) -> None:
    lab.configure({"lab": ["box1", "box3"]})
    refused = lab.start(lab.new_run_id(), "--image", "localhost/rtrain-no-such-image:1")
    assert refused.code != 0, refused
    assert "no host of lab can run" in refused.err, refused
    assert "box1: image localhost/rtrain-no-such-image:1 is not in " in refused.err, refused
    for alias in ("box1", "box3"):  # nothing shipped: the hosts were only asked
        workdir = lab.hosts.home(alias) / ".rtrain-pl" / lab.tag
        assert not workdir.exists() or not [
            p for p in workdir.iterdir() if not p.name.startswith(".")
        ], alias
