"""Why a run failed, as the far side says it (the DETAIL of status.sh's `run` row, which
becomes the run's `reason`): a Python run's last exception line, else its last line; a
death by signal by name, with "out of memory?" where the kernel counted an OOM kill; a GPU
claim refused with the gate's sentence; for torchrun the rank that failed first. status.sh,
watch.sh (under `set -f`) and stop.sh's run line say the same."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from rtrain.daemon.remote import script
from rtrain.daemon.remote.contract import answers, run_scripts
from tests.remote.conftest import IN_CI, PYTHON, Launched, Remote, wait_for
from tests.torch_python import far_torch_python

NANOGPT_SHAPED = Path(__file__).parent.parent / "trainers" / "nanogpt_shaped.py"


def launch(remote: Remote, *command: str, run_id: str | None = None, **kw: object) -> Launched:
    run_id, run_dir = remote.prepare(run_id)
    result = remote.run("launch", str(run_dir), run_id, PYTHON, *command, **kw)  # type: ignore[arg-type]
    assert result.returncode == 0, result
    return Launched(run_id, run_dir, int(result.value("pid")), int(result.value("started_at")))


def ended(remote: Remote, launched: Launched, timeout: float = 30) -> list[str]:
    """status.sh's row once the run has ended: RUN_ID STATE EXIT SIGNAL STARTED DETAIL."""
    wait_for(
        lambda: (launched.run_dir / ".rtrain" / "status").exists(), timeout, "the run's status file"
    )
    return remote.status(launched.run_id)[:6]


def python_run(remote: Remote, code: str) -> list[str]:
    return ended(remote, launch(remote, PYTHON, "-c", code))


def test_a_python_failure_reads_as_its_last_exception_line(remote: Remote) -> None:
    row = python_run(
        remote,
        "print('step 1 | loss 2.0')\n"
        "try:\n    {}['lr']\n"
        "except KeyError:\n    raise ValueError('bad shape (3, 4) \U0001f525')\n",
    )
    assert row[1:4] == ["failed", "1", "-"], row
    assert row[5] == "ValueError: bad shape (3, 4) \U0001f525", row


def test_without_a_traceback_a_last_line_that_reads_like_an_error_says_why(
    remote: Remote,
) -> None:
    message = "CUDA error: no kernel image is available for execution on the device"
    launched = launch(remote, "/bin/sh", "-c", f"echo step 1; echo '{message}' >&2; exit 3")
    row = ended(remote, launched)
    assert row[1:3] == ["failed", "3"] and row[5] == message, row


def test_a_last_line_of_progress_is_not_taken_for_the_reason(remote: Remote) -> None:
    """stdout and stderr share train.log: a run that exits 3 right after a progress line
    has no reason, rather than `step 1 | loss 1.0` as one."""
    row = python_run(remote, "import sys; print('step 1 | loss 1.0'); sys.exit(3)")
    assert row[1:3] == ["failed", "3"] and row[5] == "-", row


def test_a_rank_prefixed_traceback_names_its_rank(remote: Remote) -> None:
    """torch >= 2 writes a rank's traceback as `[rankN]: ` lines, also when a plain run
    starts its ranks itself (accelerate, mpirun, torchrun as a plain command)."""
    row = python_run(
        remote,
        "import sys\nprint('[rank0]: iter 5: loss 1.0')\n"
        "sys.stderr.write('[rank1]: Traceback (most recent call last):\\n"
        '[rank1]:   File "train.py", line 3, in <module>\\n'
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory\\n')\n"
        "print('[rank0]: iter 6: loss 0.9')\nsys.exit(1)\n",
    )
    assert row[5] == "rank 1: torch.OutOfMemoryError: CUDA out of memory", row


@pytest.mark.parametrize(
    "command",
    [
        [PYTHON, "-c", "import os, signal; print('x'); os.kill(os.getpid(), signal.SIGKILL)"],
        # a shell's child killed: the shell exits 137
        ["/bin/sh", "-c", f"{PYTHON} -c 'import os, signal; os.kill(os.getpid(), 9)'"],
    ],
    ids=["itself", "a-child"],
)
def test_a_death_by_signal_is_named(remote: Remote, command: list[str]) -> None:
    row = ended(remote, launch(remote, *command))
    assert row[1:4] == ["failed", "137", "9"] and row[5] == "killed by SIGKILL", row


@pytest.fixture
def memory_cgroup() -> Iterator[Path]:
    """A memory cgroup of 64 MiB (v1 or v2, made as root), removed after the test."""
    v2 = Path("/sys/fs/cgroup")
    v1 = v2 / "memory"
    name = f"rtrain-oom-{uuid.uuid4().hex[:8]}"
    if (v1 / "memory.limit_in_bytes").exists():
        group, limits = v1 / name, ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"]
    elif (v2 / "cgroup.controllers").exists():
        group, limits = v2 / name, ["memory.max", "memory.swap.max"]
    else:
        group, limits = None, []
    try:
        assert group is not None, "no memory cgroup controller"
        group.mkdir()
    except (AssertionError, OSError) as error:
        if IN_CI:
            pytest.fail(f"cannot make a memory cgroup: {error}")
        pytest.skip(f"cannot make a memory cgroup: {error}")
    try:
        for limit in limits:
            if (group / limit).exists():
                (group / limit).write_text("0\n" if limit == "memory.swap.max" else f"{64 << 20}\n")
        yield group
    finally:
        wait_for(lambda: (group / "cgroup.procs").read_text().strip() == "", 15, "an empty cgroup")
        group.rmdir()


def test_an_oom_kill_reads_out_of_memory(remote: Remote, memory_cgroup: Path) -> None:
    """The kernel's OOM killer takes the trainer: `killed by SIGKILL, out of memory?`."""
    procs = memory_cgroup / "cgroup.procs"
    launched = launch(
        remote,
        PYTHON,
        "-c",
        "import time; time.sleep(0.5); hog = [bytearray(1 << 20) for _ in range(1024)]",
        preexec=lambda: procs.write_text(f"{os.getpid()}\n"),
    )
    row = ended(remote, launched)
    assert row[1:4] == ["failed", "137", "9"], row
    assert row[5] == "killed by SIGKILL, out of memory?", row


def test_a_run_refused_at_its_gpu_claim_says_which_run_holds_them(
    remote: Remote, tmp_path: Path
) -> None:
    """Two GPUs, both claimed by a live run: the gate of the next exits 18 and says why."""
    bin_dir = tmp_path / "gpu-bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\nprintf '0, 0\\n1, 0\\n'\n")
    smi.chmod(0o755)
    env = {**remote.env, "PATH": f"{bin_dir}{os.pathsep}{remote.env['PATH']}"}
    holder = launch(remote, PYTHON, "-c", "import time; time.sleep(60)", env=env)
    claims = remote.home / ".rtrain" / ".gpus"
    claims.mkdir()
    for index in (0, 1):
        (claims / str(index)).write_text(f"{holder.run_id} 0\n")

    run_id, run_dir = remote.prepare()
    (run_dir / "gpu_gate.sh").write_text(script("gpus"))
    gate = ["/bin/sh", "gpu_gate.sh", "gate", str(run_dir.parent), run_id, "1", "0", "0", "--"]
    result = remote.run(
        "launch", str(run_dir), run_id, PYTHON, *gate, PYTHON, "-c", "print(1)",
        stdin=b"+wrapper\t9\n", env=env,
    )  # fmt: skip
    assert result.returncode == 0, result
    row = ended(remote, Launched(run_id, run_dir, 0, 0))
    assert row[1:3] == ["failed", "18"], row
    assert row[5] == (
        f"not enough free GPUs: GPU 0 held by {holder.run_id}, GPU 1 held by {holder.run_id}"
    ), row


@pytest.fixture
def torch_python() -> str:
    return far_torch_python()


@pytest.mark.slow
def test_a_torchrun_run_without_its_relay_blames_the_same_rank_in_every_path(
    remote: Remote, torch_python: str
) -> None:
    """torchrun run directly (as before rtrain-ranks, or with the relay gone): rank 1 raises,
    rank 0 then fails in all_reduce; with @record both write error files in the same whole
    second. status.sh, watch.sh (which runs under `set -f`) and stop.sh's run line all name
    rank 1, with the message's JSON escapes decoded."""
    shutil.copy(NANOGPT_SHAPED, remote.home / "nano.py")
    launched = launch(
        remote, torch_python, "-m", "torch.distributed.run", "--standalone",
        "--nproc-per-node=2", "--log-dir=torchrun_logs", str(remote.home / "nano.py"),
        "--fail_rank=1", "--fail_iter=2", "--record=1",
    )  # fmt: skip
    expected = "rank 1: RuntimeError: rank 1 hit a bad batch at iter 2 \U0001f525"
    assert ended(remote, launched, timeout=120)[5] == expected
    watched = remote.run("watch", "~/.rtrain", "0", "0", launched.run_id, "0", "0")
    assert watched.returncode == 0, watched
    assert watched.values("run")[0][5] == expected
    stopped = remote.stop(launched)
    assert stopped.values("run")[0][5] == expected, stopped


def ended_under_relay(remote: Remote, torch_python: str, trainer: str) -> tuple[Path, list[str]]:
    """`trainer` as one rank under rtrain-ranks, as the torchrun launcher starts it: its run
    dir and status.sh's row once it has ended."""
    relay = Path(str(resources.files("rtrain.daemon.remote") / "rank_lines.py"))
    (remote.home / "t.py").write_text(trainer)
    run_id, run_dir = remote.prepare()
    shutil.copy(relay, run_dir / "rtrain-ranks")
    result = remote.run(
        "launch", str(run_dir), run_id, torch_python, torch_python, f"{run_dir}/rtrain-ranks",
        str(run_dir), "torchrun_logs", torch_python, "-m", "torch.distributed.run",
        "--standalone", "--nproc-per-node=1", "--log-dir=torchrun_logs", "--redirects=3",
        str(remote.home / "t.py"),
    )  # fmt: skip
    assert result.returncode == 0, result
    row = ended(remote, Launched(run_id, run_dir, 0, 0), timeout=120)
    return run_dir, row


@pytest.mark.slow
def test_the_relay_keeps_a_rank_s_unfinished_line_and_ends_with_torchrun(
    remote: Remote, torch_python: str
) -> None:
    """rtrain-ranks as the torchrun launcher starts it: a rank's last line without a
    newline still arrives (with one), and the relay exits with torchrun's code."""
    trainer = (
        "import os, sys; print('first'); sys.stderr.write('no newline at the end'); sys.exit(4)"
    )
    run_dir, row = ended_under_relay(remote, torch_python, trainer)
    assert row[1:3] == ["failed", "1"] and row[5] == "rank 0 (exit 4): no newline at the end"
    log = (run_dir / "train.log").read_text().splitlines()
    assert "[rank0]: first" in log and "[rank0]: no newline at the end" in log, log


@pytest.mark.slow
def test_a_rank_that_raised_then_aborted_says_its_exception(
    remote: Remote, torch_python: str
) -> None:
    """A rank whose exception ends it, then a library's teardown aborts it (torch's process
    groups do, at exit): its exception says why, not the SIGABRT alone."""
    trainer = (
        "import os, traceback\n"
        "try:\n    raise ValueError('rank ran out of patience')\n"
        "except ValueError:\n    traceback.print_exc()\n    os.abort()\n"
    )
    _, row = ended_under_relay(remote, torch_python, trainer)
    assert row[1] == "failed", row
    assert row[5].startswith("rank 0"), row
    assert row[5].endswith(": ValueError: rank ran out of patience (then killed by SIGABRT)"), row


def test_the_relay_is_plain_python_of_the_standard_library() -> None:
    """It runs on the far host with the run's python: no rtrain import, no third party."""
    relay = Path(str(resources.files("rtrain.daemon.remote") / "rank_lines.py"))
    imports = subprocess.run(
        [PYTHON, "-I", "-S", "-c", f"import runpy; runpy.run_path({str(relay)!r}, run_name='x')"],
        capture_output=True,
        text=True,
    )
    assert imports.returncode == 0, imports.stderr


def test_a_long_reason_is_cut_to_one_line_of_whole_characters(remote: Remote) -> None:
    """300 bytes at most, and a character the cut split is not shown half."""
    launched = launch(remote, PYTHON, "-c", "raise ValueError('x' + '\\U0001f525' * 200)")
    wait_for(
        lambda: (launched.run_dir / ".rtrain" / "status").exists(), 30, "the run's status file"
    )
    raw = remote.run("status", "~/.rtrain", launched.run_id)
    (row,) = (run_scripts.run_row(values) for values in answers.Lines(raw.stdout).rows("run"))
    assert row.detail is not None and row.detail.startswith("ValueError: x\U0001f525"), row
    assert len(row.detail.encode()) <= 300 and "\ufffd" not in row.detail, row
