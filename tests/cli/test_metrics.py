"""Metrics read from a run's log and metrics.jsonl, and GPU telemetry, as the CLI shows them."""

from __future__ import annotations

import json
import re
import shutil
import time
from typing import Any

import pytest

from tests.cli.conftest import WAIT_S, WAITING_TRAINER, Cli
from tests.cli.rtrain_command import rtrain_executable
from tests.cli.test_torchrun import DATASET, TORCHRUN_DEMO_CONFIG
from tests.cli.tmux_terminal import Tmux
from tests.hosts import GPULOAD_USER
from tests.torch_python import far_torch_python

# One line of each documented format, then a metrics.jsonl beside the log.
MIXED_TRAINER = r"""
import json, sys
print("step 1 | loss 2.5 | lr 0.01")
print("{'loss': 2.0, 'grad_norm': 0.5, 'learning_rate': 2e-05, 'epoch': 0.5}")
print('{"step": 3, "loss": 1.5, "accuracy": 0.75, "tag": "x"}')
sys.stdout.write("\rTraining:  40%|####      | 4/10 [00:02<00:03,  2.00it/s, loss=1.25]")
print()
print("step 5 | loss nan | lr 0.01")
print("a line that says nothing | step or loss")
with open("metrics.jsonl", "w") as f:
    f.write(json.dumps({"step": 6, "eval_loss": 0.9}) + "\n")
print("done", flush=True)
"""

# Falling loss, then a bar at 5 of 10.
SLOPE_TRAINER = r"""
import sys
for step, loss in enumerate([2.5, 2.0, 1.5, 1.0, 0.5], 1):
    print("step %d | loss %g | lr 0.01" % (step, loss))
sys.stdout.write("\r 50%|#####     | 5/10 [00:05<00:05,  1.00it/s]\n")
"""

EXPECTED_ROWS = [
    {"step": 1, "loss": 2.5, "lr": 0.01},
    {"step": 2, "loss": 2.0, "grad_norm": 0.5, "learning_rate": 2e-05, "epoch": 0.5},
    {"step": 3, "loss": 1.5, "accuracy": 0.75},
    {"step": 4, "loss": 1.25},
    {"step": 5, "loss": None, "lr": 0.01},
    {"step": 6, "eval_loss": 0.9},
]


def wait_for(cli: Cli, args: list[str], ready: Any) -> Any:
    deadline = time.monotonic() + WAIT_S
    while True:
        done = cli(*args)
        assert done.code == 0, done
        value = ready(done)
        if value:
            return value
        assert time.monotonic() < deadline, f"never ready: {done}"
        time.sleep(0.2)


def test_each_format_comes_out_as_series(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", MIXED_TRAINER)
    cli.wait_state("plain", run_id, "completed")
    done = cli("metrics", "plain", run_id, "--json")
    assert done.code == 0, done
    assert done.json() == EXPECTED_ROWS

    # The words: every series' latest value, the bar's progress.
    shown = cli("metrics", "plain", run_id)
    assert shown.code == 0, shown
    lines = {line.split()[0]: line.split()[1:] for line in shown.out_lines}
    assert lines["loss"] == ["nan"]
    assert lines["eval_loss"] == ["0.9"]
    assert lines["progress"][:2] == ["40%", "(4/10)"]

    # `runs` and `status --json` carry the latest loss and the progress.
    runs = cli("runs", "--json").json()
    [run] = [r for r in runs if r["runId"] == run_id]
    assert run["latest"]["eval_loss"] == 0.9 and run["latest"]["loss"] is None
    assert run["progress"] == {
        "n": 4,
        "total": 10,
        "percent": 40,
        "rate": 2,
        "elapsed": 2,
    }, "the run has ended: where its bar stopped, and no time left"
    table = cli("runs").out_lines
    [row] = [line for line in table if line.startswith(run_id)]
    assert "40% (4/10)" in row and "ETA" not in row and "loss nan" in row
    status = cli("status", "plain", run_id, "--json").json()
    assert status["latest"]["accuracy"] == 0.75
    # Piped, status says the state alone: scripts compare it.
    assert cli("status", "plain", run_id).out == "completed\n"


def test_on_a_terminal_status_and_metrics_say_more(cli: Cli, terminal: Tmux) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", SLOPE_TRAINER)
    cli.wait_state("plain", run_id, "completed")
    rtrain = rtrain_executable()
    terminal.start(f"{rtrain} status plain {run_id}; {rtrain} metrics plain {run_id}")
    shown = terminal.wait_for("lr ")
    assert "completed  50% (5/10)  loss 0.5" in shown, "an ended run: no ETA"
    [loss] = [line for line in shown if line.startswith("loss")]
    # The sparkline: falling from the highest bar to the lowest.
    assert loss.split()[1:] == ["0.5", "█▆▅▃▁"], loss


def test_metrics_follow_streams_points_until_the_run_ends(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", WAITING_TRAINER)
    follow = cli.spawn("metrics", "plain", run_id, "--follow", "--json")
    first = json.loads(follow.wait_for_line(lambda line: '"loss"' in line))
    assert first == {"step": 1, "loss": 1.0}
    cli.finish(run_id)
    second = json.loads(follow.wait_for_line(lambda line: '"loss"' in line))
    assert second == {"step": 2, "loss": 0.5}
    done = follow.finish()
    assert done.code == 0, done


def test_hosts_and_status_show_the_gpus_a_run_uses(cli: Cli) -> None:
    run_id = cli.new_run_id()
    # The fake nvidia-smi counts this process as computing on GPUs 0 and 1; on GPU 1 it
    # cannot read utilization or memory, as happens in containers.
    load = "RTRAIN_FAKE_GPU_LOAD=0:87:30000,1:NA:NS"
    far_workdir = cli.hosts.home(GPULOAD_USER) / ".rtrain-cli" / cli.tag
    try:
        started = cli(
            "start", "gpuload", "-c", cli.file("cfg.yaml", "steps: 1\n").name,
            "--run-id", run_id, "--workdir", cli.workdir, "--gpus", "0", "--no-follow",
            "--", "env", load, "{python}", "-c", WAITING_TRAINER,
        )  # fmt: skip
        assert started.code == 0, started

        def gpuload_gpus(done: Any) -> Any:
            [host] = [h for h in done.json() if h["alias"] == "gpuload"]
            gpus = host.get("gpus")
            return gpus if gpus and gpus[0].get("processes") else None

        gpus = wait_for(cli, ["hosts", "--json"], gpuload_gpus)
        assert [g["index"] for g in gpus] == [0, 1]
        assert gpus[0]["utilization"] == 87 and gpus[0]["memoryUsedMib"] == 30000
        assert gpus[0]["memoryTotalMib"] == 81559 and gpus[0]["powerW"] == 69.88
        # [N/A] and [Not Supported] are left out, not read as numbers.
        assert "utilization" not in gpus[1] and "memoryUsedMib" not in gpus[1]
        assert "powerW" not in gpus[1] and gpus[1]["temperatureC"] == 31
        ours = [p for p in gpus[0]["processes"] if p["runId"] == run_id]
        assert ours and all(p["usedMemoryMib"] == 30000 for p in ours)
        assert all("usedMemoryMib" not in p for p in gpus[1]["processes"])

        table = cli("hosts").out_lines
        [row] = [line for line in table if line.startswith("gpuload")]
        assert "0: 87% 29.3/79.6 GiB, 1: - ?/79.6 GiB" in row
        status = cli("status", "gpuload", run_id, "--json").json()
        assert status["gpus"] == [0, 1]

        (far_workdir / run_id / "finish").touch()
        cli.wait_state("gpuload", run_id, "completed")
    finally:
        shutil.rmtree(far_workdir, ignore_errors=True)


# Waits for the test (the file `go`), prints a line, then writes its last metrics.jsonl
# record and log line just before it exits (the file `finish`).
STEPPING_TRAINER = r"""
import json, os, time
def wait(name):
    while not os.path.exists(name):
        time.sleep(0.05)
wait("go")
print("step 1 | loss 1.0", flush=True)
print("step 2 | loss 0.5", flush=True)
wait("finish")
with open("metrics.jsonl", "a") as f:
    f.write(json.dumps({"step": 3, "eval_loss": 0.25}) + "\n")
print("step 3 | loss 0.125", flush=True)
"""


def slow_monitor(cli: Cli) -> None:
    """A monitor that polls once after a start and then not within the test: what the
    daemon answers comes from reads the test can name."""
    cli.env["RTRAIN_POLL_INTERVAL"] = "120"


def start_stepping(cli: Cli) -> str:
    """A STEPPING_TRAINER run, past the monitor's one poll (its GPU sample says so), then
    let go: nothing polls while it prints."""
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", STEPPING_TRAINER)

    def sampled(done: Any) -> Any:
        return [h for h in done.json() if h["alias"] == "plain" and h.get("gpusAt")]

    wait_for(cli, ["hosts", "--json"], sampled)
    (cli.far_run_dir(run_id) / "go").touch()
    cli.wait_far_log(run_id, "step 2 |")
    return run_id


def test_metrics_of_an_active_run_read_its_log_up_to_now(cli: Cli) -> None:
    slow_monitor(cli)
    run_id = start_stepping(cli)
    # No poll came since the trainer printed: `metrics` reads the log itself, once.
    done = cli("metrics", "plain", run_id, "--json")
    assert done.code == 0, done
    assert done.json() == [{"step": 1, "loss": 1.0}, {"step": 2, "loss": 0.5}]
    cli.finish(run_id)
    cli.wait_state("plain", run_id, "completed")


def test_status_of_an_active_run_shows_the_latest_values_as_of_now(cli: Cli) -> None:
    slow_monitor(cli)
    run_id = start_stepping(cli)
    status = cli("status", "plain", run_id, "--json")
    assert status.code == 0, status
    assert status.json()["state"] == "running"
    assert status.json()["latest"] == {"loss": 0.5}
    cli.finish(run_id)
    cli.wait_state("plain", run_id, "completed")


def test_the_last_metrics_of_a_run_status_sees_end_are_read_with_its_end(cli: Cli) -> None:
    slow_monitor(cli)
    run_id = start_stepping(cli)
    # A tail reads the log while the run runs, so the daemon has read some of it already.
    wait_for(cli, ["tail", "plain", run_id, "--no-follow"], lambda d: "step 2" in d.out)
    cli.finish(run_id)
    # `status` sees the run end (the monitor, polling seldom, has not looked): the same
    # command read the files after the state, so the record written last is there.
    cli.wait_state("plain", run_id, "completed")
    [run] = [r for r in cli("runs", "--json").json() if r["runId"] == run_id]
    assert run["latest"] == {"loss": 0.125, "eval_loss": 0.25}


# Prints two steps; stopped (SIGTERM), writes its last metrics.jsonl record and log line.
STOPPING_TRAINER = r"""
import json, signal, sys, time
def last(signum, frame):
    with open("metrics.jsonl", "a") as f:
        f.write(json.dumps({"step": 3, "eval_loss": 0.25}) + "\n")
    print("step 3 | loss 0.125", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, last)
print("step 1 | loss 1.0", flush=True)
print("step 2 | loss 0.5", flush=True)
while True:
    time.sleep(0.05)
"""


def stop_after_its_last_words(cli: Cli) -> str:
    """A STOPPING_TRAINER run the daemon read while it ran, then stopped: `stop` sees it
    end and reads none of its files."""
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", STOPPING_TRAINER)
    wait_for(cli, ["tail", "plain", run_id, "--no-follow"], lambda d: "step 2" in d.out)
    stopped = cli("stop", "plain", run_id)
    assert stopped.code == 0, stopped
    assert "step 3 | loss 0.125" in (cli.far_run_dir(run_id) / "train.log").read_text()
    return run_id


def test_the_monitor_reads_the_last_metrics_of_a_run_that_ended_unread(cli: Cli) -> None:
    slow_monitor(cli)
    run_id = stop_after_its_last_words(cli)

    # A start pokes the monitor: its poll reads the ended run's files once more.
    other = cli.new_run_id()
    cli.start(other, "{python}", "-c", "print('step 1 | loss 9.0')")

    def latest_eval_loss(done: Any) -> Any:
        [run] = [r for r in done.json() if r["runId"] == run_id]
        return (run.get("latest") or {}).get("eval_loss")

    assert wait_for(cli, ["runs", "--json"], latest_eval_loss) == 0.25
    done = cli("metrics", "plain", run_id, "--json")
    assert done.code == 0, done
    assert done.json() == [
        {"step": 1, "loss": 1.0},
        {"step": 2, "loss": 0.5},
        {"step": 3, "loss": 0.125, "eval_loss": 0.25},
    ]


def test_metrics_of_a_run_that_ended_unread_read_its_last_bytes_when_asked(cli: Cli) -> None:
    slow_monitor(cli)
    run_id = stop_after_its_last_words(cli)
    done = cli("metrics", "plain", run_id, "--json")
    assert done.code == 0, done
    assert done.json()[-1] == {"step": 3, "loss": 0.125, "eval_loss": 0.25}


def test_a_removed_runs_points_go_with_it(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", "print('step 1 | loss 5.0'); print('step 2 | loss 4.0')")
    cli.wait_state("plain", run_id, "completed")
    first = cli("metrics", "plain", run_id, "--json")
    assert first.json() == [{"step": 1, "loss": 5.0}, {"step": 2, "loss": 4.0}], first
    removed = cli("rm", "plain", run_id)
    assert removed.code == 0, removed
    # The same id, a new run: its points alone.
    cli.start(run_id, "{python}", "-c", "print('step 1 | loss 1.0')")
    cli.wait_state("plain", run_id, "completed")
    again = cli("metrics", "plain", run_id, "--json")
    assert again.code == 0, again
    assert again.json() == [{"step": 1, "loss": 1.0}]


# nanoGPT-shaped: attempt 1 fails after iter 3 (its checkpoint is at iter 2); told to
# resume, attempt 2 goes on from iter 2.
RESUMING_TRAINER = r"""
import sys
resume = "--init_from=resume" in sys.argv
for it in (range(2, 5) if resume else range(1, 4)):
    print("iter %d: loss %.1f, time 1.00ms, mfu 0.01%%" % (it, 10 - it - 0.5 * resume), flush=True)
sys.exit(0 if resume else 1)
"""


def test_a_resumed_attempt_continues_the_curve_from_its_checkpoint(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", RESUMING_TRAINER)
    cli.wait_state("plain", run_id, "failed (exit 1)")
    first = cli("metrics", "plain", run_id, "--json")
    assert [row["step"] for row in first.json()] == [1, 2, 3], first
    restarted = cli("restart", "plain", run_id, "--append", "--", "--init_from=resume")
    assert restarted.code == 0, restarted
    cli.wait_state("plain", run_id, "completed")
    done = cli("metrics", "plain", run_id, "--json")
    assert done.code == 0, done
    # Attempt 1's iter 2 and 3 were undone by the resume from iter 2.
    assert done.json() == [
        {"step": 1, "loss": 9.0, "time": 1.0, "mfu": 0.01},
        {"step": 2, "loss": 7.5, "time": 1.0, "mfu": 0.01},
        {"step": 3, "loss": 6.5, "time": 1.0, "mfu": 0.01},
        {"step": 4, "loss": 5.5, "time": 1.0, "mfu": 0.01},
    ]


# Each of two ranks prints nanoGPT's line, rank 1 with other losses; torchrun's --tee tags
# every line with its rank (`[default0]:`), as on a multi-GPU host.
RANKS_TRAINER = r"""
import os
rank = int(os.environ["RANK"])
for it in range(1, 4):
    print("iter %d: loss %.1f, time 1.00ms, mfu 0.01%%" % (it, 10 * rank + 4 - it), flush=True)
"""


def test_metrics_of_torchruns_rank_tagged_lines_are_rank_0s(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(
        run_id, "{python}", "-m", "torch.distributed.run", "--standalone",
        "--nproc-per-node", "2", "--tee", "3", "--no-python", "{python}", "-c", RANKS_TRAINER,
        python=far_torch_python(),
    )  # fmt: skip
    cli.wait_state("plain", run_id, "completed")
    log = (cli.far_run_dir(run_id) / "train.log").read_text()
    assert "[default1]:iter 3: loss 11.0" in log, log
    done = cli("metrics", "plain", run_id, "--json")
    assert done.code == 0, done
    assert [(row["step"], row["loss"]) for row in done.json()] == [(1, 3.0), (2, 2.0), (3, 1.0)]


def test_metrics_of_the_torchrun_launchers_rank_lines(cli: Cli) -> None:
    # rtrain's own relay tags each rank's whole lines with `[rankN]: ` in train.log.
    cli.file("cfg.yaml", TORCHRUN_DEMO_CONFIG)
    cli.file("data.jsonl", DATASET)
    run_id = cli.new_run_id("ranks")
    cli.start(
        run_id, dataset="data.jsonl", launcher="torchrun", gpus="2", python=far_torch_python()
    )
    cli.wait_state("plain", run_id, "completed")
    log = (cli.far_run_dir(run_id) / "train.log").read_text()
    printed = [
        (int(s), float(v))
        for s, v in re.findall(r"^\[rank0\]: step (\d+) \| loss ([\d.]+)", log, re.M)
    ]
    assert [s for s, _ in printed] == [10, 20, 30, 40], log
    done = cli("metrics", "plain", run_id, "--json")
    assert done.code == 0, done
    # (metrics.jsonl holds the same losses, to more digits)
    rows = [row for row in done.json() if "loss" in row]
    assert [row["step"] for row in rows] == [step for step, _ in printed], done.json()
    assert [row["loss"] for row in rows] == pytest.approx([v for _, v in printed], abs=1e-4)
    # `[rank0]: done: 40 steps, final loss 0.0124, ...` is in the log alone.
    assert rows[-1]["final_loss"] == pytest.approx(printed[-1][1], abs=1e-4)


def test_runs_keeps_loss_and_progress_of_an_ended_run_after_a_daemon_restart(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", SLOPE_TRAINER)
    cli.wait_state("plain", run_id, "completed")

    def shown(done: Any) -> Any:
        [run] = [r for r in done.json() if r["runId"] == run_id]
        return run if run.get("latest") and run.get("progress") else None

    before = wait_for(cli, ["runs", "--json"], shown)
    assert before["latest"] == {"loss": 0.5, "lr": 0.01}
    assert "eta" not in before["progress"], "an ended run has no time left"
    # config.toml edits need one; the new daemon has read no log yet, and `metrics` is not
    # asked for the run.
    assert cli("daemon", "stop").code == 0
    [after] = [r for r in cli("runs", "--json").json() if r["runId"] == run_id]
    assert after["latest"] == before["latest"]
    assert after["progress"] == before["progress"]
    assert (after["progress"]["n"], after["progress"]["total"]) == (5, 10)
    table = cli("runs")
    assert table.code == 0, table
    [row] = [line for line in table.out.splitlines() if line.startswith(run_id)]
    assert "50% (5/10)" in row and "loss 0.5" in row, row
