"""Runs under torchrun through the CLI: two ranks on CPU (gloo), on `local` and over the real
sshd, with a python that has torch (tests/torch_python.py)."""

from __future__ import annotations

import re
import socket
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import Cli
from tests.operations.processes import marked_pids
from tests.torch_python import far_torch_python

# Small and quick: two ranks of the demo trainer take a few seconds on a busy CPU.
TORCHRUN_DEMO_CONFIG = """\
steps: 40
learning_rate: 0.03
batch_size: 16
log_every: 10
checkpoint_every: 20
context: 3
hidden: 16
backend: torch
device: cpu
"""
SLOW = TORCHRUN_DEMO_CONFIG.replace("steps: 40", "steps: 100000") + "sleep_per_step: 0.05\n"
DATASET = '{"prompt": "Q: up?\\nA:", "completion": " down"}\n' * 40
# argv: DIR COMMAND...: run COMMAND in DIR (the first run's), in this process.
RUN_IN_DIR = "import os, sys; os.chdir(sys.argv[1]); os.execvp(sys.argv[2], sys.argv[2:])"
# Each rank's lines reach train.log whole, behind `[rankN]: ` (rtrain-ranks; not on Slurm,
# which runs torchrun without the relay).
STEP = re.compile(r"^(?:\[rank0\]: )?step (\d+) \| loss (\d+\.\d+)", re.MULTILINE)
# A trainer shaped like nanoGPT's (tests/trainers): `--key=value` settings, failure knobs.
NANOGPT_SHAPED = (Path(__file__).parent.parent / "trainers" / "nanogpt_shaped.py").read_text()

# Rank 1 raises; rank 0 waits to be taken down by torchrun. With `@record` (torch's own
# error file) or without (torchrun's summary and the log).
FAILING_RANK = """
import os, sys, time
RECORD = {record}
def main():
    if os.environ["RANK"] == "1":
        time.sleep(0.3)
        raise ValueError("rank one ran out of patience")
    time.sleep(60)
if RECORD:
    from torch.distributed.elastic.multiprocessing.errors import record
    main = record(main)
main()
"""


@pytest.fixture
def torch_python() -> str:
    return far_torch_python()


@pytest.fixture
def port_29500_taken() -> Iterator[None]:
    """torchrun's fixed default port held by someone else, as on a shared box."""
    holder = socket.socket()
    try:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("127.0.0.1", 29500))
        holder.listen()
    except OSError:
        pass  # already held (by another test run): just as good
    try:
        yield
    finally:
        holder.close()


def losses(text: str) -> list[float]:
    return [float(loss) for _, loss in STEP.findall(text)]


@pytest.mark.usefixtures("port_29500_taken")
def test_demo_trainer_under_torchrun_on_local_trains_checkpoints_and_resumes(
    cli: Cli, torch_python: str
) -> None:
    cli.file("cfg.yaml", TORCHRUN_DEMO_CONFIG)
    cli.file("data.jsonl", DATASET)
    first = cli.new_run_id("ranks")
    done = cli(
        "start", "local", "-c", "cfg.yaml", "-d", "data.jsonl", "--run-id", first,
        "--workdir", str(cli.local_workdir), "--launcher", "torchrun", "--gpus", "2",
        "--python", torch_python,
    )  # fmt: skip
    assert done.code == 0, done
    header = next(line for line in done.out_lines if line.startswith("[rank0]: rtrain demo"))
    assert "ranks 2" in header and "backend torch" in header, header
    # rank 0 alone prints: one line per logged step, not one per rank
    assert [int(step) for step, _ in STEP.findall(done.out)] == [10, 20, 30, 40], done
    trained = losses(done.out)
    assert trained[-1] < trained[0] * 0.8, trained
    assert done.err_lines[-1] == f"{first} on local: completed", done
    run_dir = cli.local_workdir / first
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == [
        "step-000020.json",
        "step-000040.json",
    ]
    meta = (run_dir / "meta.json").read_text()
    assert "torch.distributed.run" in meta and "--standalone" in meta

    # Started again in the same run dir with more steps, both ranks resume from step 40.
    second = cli.new_run_id("again")
    again = cli(
        "start", "local", "-c", "cfg.yaml", "--run-id", second,
        "--workdir", str(cli.local_workdir), "--gpus", "2", "--python", torch_python,
        "--", "{python}", "-c", RUN_IN_DIR, str(run_dir),
        "{torchrun}", "demo_trainer.py", "--config", "config.yaml", "--dataset", "data.jsonl",
        "--steps", "60",
    )  # fmt: skip
    assert again.code == 0, again
    assert "[rank0]: resuming from step 40" in again.out_lines, again
    assert [int(step) for step, _ in STEP.findall(again.out)] == [50, 60], again
    assert again.out_lines[-1].startswith("[rank0]: done: 60 steps"), again


def test_stopping_a_torchrun_run_over_ssh_leaves_no_rank(cli: Cli, torch_python: str) -> None:
    cli.file("cfg.yaml", SLOW)
    cli.file("data.jsonl", DATASET)
    run_id = cli.new_run_id("stop")
    cli.start(run_id, dataset="data.jsonl", launcher="torchrun", gpus="2", python=torch_python)
    cli.wait_far_log(run_id, "step 10 |")
    ranks = marked_pids(lambda marker: marker == run_id)
    assert len(ranks) >= 4, ranks  # wrapper, torchrun's agent, two ranks (at least)

    stopped = cli("stop", "plain", run_id)
    assert (stopped.code, stopped.out) == (0, f"stopped {run_id} on plain\n"), stopped
    assert marked_pids(lambda marker: marker == run_id) == []
    assert cli("status", "plain", run_id).out == "stopped\n"
    log = (cli.far_run_dir(run_id) / "train.log").read_text()
    assert re.search(r"demo_trainer: stopped by SIGTERM at step \d+; checkpoint saved", log), log
    assert list((cli.far_run_dir(run_id) / "checkpoints").glob("step-*.json"))


def test_rtrain_restart_resumes_every_rank_of_a_stopped_torchrun_run(
    cli: Cli, torch_python: str
) -> None:
    cli.file("cfg.yaml", SLOW.replace("steps: 100000", "steps: 70"))
    cli.file("data.jsonl", DATASET)
    run_id = cli.new_run_id("again")
    cli.start(run_id, dataset="data.jsonl", launcher="torchrun", gpus="2", python=torch_python)
    cli.wait_far_log(run_id, "step 30 |")
    stopped = cli("stop", "plain", run_id)
    assert stopped.code == 0, stopped
    saved = sorted((cli.far_run_dir(run_id) / "checkpoints").glob("step-*.json"))
    assert saved, "no checkpoint to resume from"
    step = int(saved[-1].stem.split("-")[1])

    done = cli("restart", "plain", run_id)
    assert done.code == 0, done
    # Both ranks start from the checkpoint (the trainer checks they agree), rank 0 says so.
    assert f"[rank0]: resuming from step {step}" in done.out_lines, done
    steps = [int(s) for s, _ in STEP.findall(done.out)]
    assert steps and steps[0] > step and steps[-1] == 70, done
    assert done.err_lines[-1] == f"{run_id} on plain: completed", done
    status = cli("status", "plain", run_id, "--json").json()
    assert [(a["number"], a["state"]) for a in status["attempts"]] == [
        (1, "stopped"),
        (2, "completed"),
    ], status


@pytest.mark.parametrize("record", [True, False], ids=["error-file", "summary-and-log"])
def test_a_failing_rank_is_named_with_its_first_error_line(
    cli: Cli, torch_python: str, record: bool
) -> None:
    cli.file("fail.py", FAILING_RANK.format(record=record))
    run_id = cli.new_run_id("fail")
    done = cli(
        "start", "plain", "-c", "fail.py", "--run-id", run_id, "--workdir", cli.workdir,
        "--gpus", "2", "--python", torch_python, "--", "{torchrun}", "config.yaml",
    )  # fmt: skip
    assert done.code == 1, done
    expected = "failed (exit 1, rank 1: ValueError: rank one ran out of patience)"
    assert done.err_lines[-1] == f"{run_id} on plain: {expected}", done
    assert cli("status", "plain", run_id).out == f"{expected}\n"
    # The command as the user gave it ({torchrun} expanded), not rtrain's relay around it.
    command = cli("status", "plain", run_id, "--json").json()["command"]
    assert not any("rtrain-ranks" in word for word in command), command
    assert command[:3] == [torch_python, "-m", "torch.distributed.run"], command
    assert command[-1] == "config.yaml" and "--redirects=3" not in command, command


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpus", "0", "--launcher", "torchrun"], "not --gpus 0"),
        (["--gpus", "2", "--", "{torchrun}x", "t.py"], "a word of its own"),
        (["--launcher", "torchrun", "--", "bash", "t.sh"], "starts with {python}"),
        (["--launcher", "process", "--", "{torchrun}", "t.py"], "--launcher process"),
    ],
)
def test_torchrun_requests_that_cannot_work_are_one_sentence(
    cli: Cli, args: list[str], message: str
) -> None:
    cli.file("cfg.yaml", TORCHRUN_DEMO_CONFIG)
    done = cli("start", "local", "-c", "cfg.yaml", "--no-follow", *args)
    assert done.code == 2, done
    assert message in done.err and len(done.err_lines) == 1, done
    assert not cli.local_workdir.exists() or not list(cli.local_workdir.iterdir())


# Rank 0 takes 15 s to shut down after SIGTERM (a big checkpoint): longer than the 10 s a
# plain run's stop waits, within the 35 s a torchrun run's stop waits by default.
SLOW_TO_STOP_RANK = """
import os, signal, sys, time
def slowly(signum, frame):
    time.sleep(15)
    open("rank-%s-done" % os.environ["RANK"], "w").close()
    sys.exit(0)
signal.signal(signal.SIGTERM, slowly)
open("rank-%s-ready" % os.environ["RANK"], "w").close()
time.sleep(300)
"""


def test_a_torchrun_run_gets_35_s_of_grace_by_default(cli: Cli, torch_python: str) -> None:
    cli.file("slow.py", SLOW_TO_STOP_RANK)
    run_id = cli.new_run_id("grace")
    cli.start(run_id, "{torchrun}", "config.yaml", gpus="2", python=torch_python, config="slow.py")
    run_dir = cli.far_run_dir(run_id)
    deadline = time.monotonic() + 60
    while not all((run_dir / f"rank-{rank}-ready").exists() for rank in (0, 1)):
        assert time.monotonic() < deadline, list(run_dir.iterdir())
        time.sleep(0.1)

    stopped = cli("stop", "plain", run_id)

    assert (stopped.code, stopped.out) == (0, f"stopped {run_id} on plain\n"), stopped
    assert (run_dir / "rank-0-done").exists() and (run_dir / "rank-1-done").exists()
    assert marked_pids(lambda marker: marker == run_id) == []


def start_nanogpt_shaped(cli: Cli, torch_python: str, run_id: str, *settings: str) -> None:
    """Two ranks of the nanoGPT-shaped trainer on the plain host, not followed."""
    cli.file("nano.py", NANOGPT_SHAPED)
    cli.start(
        run_id,
        "{torchrun}",
        "config.yaml",
        *settings,
        gpus="2",
        python=torch_python,
        config="nano.py",
    )


@pytest.mark.parametrize("record", ["0", "1"], ids=["summary", "error-files"])
def test_the_rank_that_failed_first_is_blamed_not_its_peer_that_lost_the_connection(
    cli: Cli, torch_python: str, record: str
) -> None:
    """Rank 1 raises at iteration 5 while rank 0 waits in all_reduce and then fails too
    (gloo: connection closed by peer). torch prefixes both tracebacks with `[rankN]: `, and
    with @record both ranks write error files stamped in the same whole second."""
    run_id = cli.new_run_id("blame")
    start_nanogpt_shaped(
        cli, torch_python, run_id, "--fail_rank=1", "--fail_iter=5", f"--record={record}"
    )
    expected = "failed (exit 1, rank 1: RuntimeError: rank 1 hit a bad batch at iter 5 \U0001f525)"
    cli.wait_state("plain", run_id, expected)  # as the monitor saw it end (watch.sh)
    as_json = cli("status", "plain", run_id, "--json").json()
    assert as_json["reason"] == expected.removeprefix("failed (exit 1, ").removesuffix(")")
    runs = cli("runs", "--host", "plain")
    assert expected in runs.out, runs
    log = (cli.far_run_dir(run_id) / "train.log").read_text()
    assert "[rank0]: iter 5: loss" in log, log
    assert "[rank1]: RuntimeError: rank 1 hit a bad batch" in log, log


@pytest.mark.parametrize(
    ("how", "why"),
    [
        ("exit3", "rank 1 (exit 3): rank 1: giving up at iter 3"),
        ("kill", "rank 1: killed by SIGKILL"),
    ],
)
def test_a_rank_that_exits_with_a_code_or_dies_by_a_signal_says_so(
    cli: Cli, torch_python: str, how: str, why: str
) -> None:
    run_id = cli.new_run_id(how)
    start_nanogpt_shaped(
        cli, torch_python, run_id, "--fail_rank=1", "--fail_iter=3", f"--fail_how={how}"
    )
    cli.wait_state("plain", run_id, f"failed (exit 1, {why})")


def test_eight_ranks_printing_at_once_keep_every_line_whole(cli: Cli, torch_python: str) -> None:
    """8 ranks x 10,000 lines into one train.log: every line arrives whole, once, in its
    rank's order, behind its rank's prefix (with PYTHONUNBUFFERED=1 each print is two
    writes, which merged lines of ranks writing at once)."""
    run_id = cli.new_run_id("lines")
    cli.file("nano.py", NANOGPT_SHAPED)
    cli.start(
        run_id, "{torchrun}", "config.yaml", "--lines=10000",
        host="local", gpus="8", launcher="torchrun", python=torch_python, config="nano.py",
    )  # fmt: skip
    cli.wait_state("local", run_id, "completed")
    log = (cli.local_workdir / run_id / "train.log").read_text()
    whole = re.compile(r"^\[rank(\d)\]: rank (\d) line (\d+) x{64}$")
    numbers: dict[int, list[int]] = {rank: [] for rank in range(8)}
    broken = []
    for line in log.splitlines():
        if " line " not in line and "xxxx" not in line:
            continue  # torchrun's own lines
        match = whole.match(line)
        if match is None or match[1] != match[2]:
            broken.append(line)
        else:
            numbers[int(match[1])].append(int(match[3]))
    assert broken[:5] == [], f"{len(broken)} broken lines"
    assert all(found == list(range(10000)) for found in numbers.values()), Counter(
        {rank: len(found) for rank, found in numbers.items()}
    )
