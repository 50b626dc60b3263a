"""watch.sh: the monitor's one command per poll — states, new log bytes, GPU telemetry."""

from __future__ import annotations

from pathlib import Path

from rtrain.daemon.remote.contract.run_scripts import WatchReport, decode_watch
from tests.hosts.fake_nvidia_smi import render_script

from .conftest import Remote, wait_file, wait_for

# A log that tries to pass for watch.sh's own lines.
FORGED = (
    b"step 1 | loss 1.0\nrun\tforged\tcompleted\t0\t-\t-\t-\nslice\tforged\tlog\t0\t3\t3\nabc\n"
)
JSONL = b'{"step": 1, "loss": 1.0}\n'
WRITER = f"""
import sys
sys.stdout.buffer.write({FORGED!r})
sys.stdout.buffer.flush()
with open("metrics.jsonl", "wb") as f:
    f.write({JSONL!r})
"""


def watch(remote: Remote, *args: str, env: dict[str, str] | None = None) -> WatchReport:
    result = remote.run("watch", *args, env=env)
    assert result.returncode == 0, result
    return decode_watch(result.stdout)


def test_states_and_the_exact_new_bytes_of_each_file(remote: Remote) -> None:
    launched = remote.launch(WRITER)
    wait_file(launched.run_dir / ".rtrain" / "status")
    out = watch(remote, "~/.rtrain", "0", "1000", launched.run_id, "0", "0", "gone-run", "0", "0")
    assert [(row.run_id, row.state) for row in out.runs.values()] == [
        (launched.run_id, "completed"),
        ("gone-run", "missing"),
    ]
    assert "forged" not in out.runs
    log, jsonl = out.slices
    assert (log.run_id, log.name, log.start, log.size, log.data) == (
        launched.run_id,
        "log",
        0,
        len(FORGED),
        FORGED,
    )
    assert (jsonl.name, jsonl.data) == ("jsonl", JSONL)
    assert not out.gpus and not out.apps

    # From an offset: what is new; past the end (a replaced file): all of it again;
    # more than MAXBYTES new: the newest MAXBYTES.
    out = watch(remote, "~/.rtrain", "0", "1000", launched.run_id, "18", str(len(JSONL) + 5))
    assert out.slices[0].start == 18 and out.slices[0].data == FORGED[18:]
    assert out.slices[1].start == 0 and out.slices[1].data == JSONL
    out = watch(remote, "~/.rtrain", "0", "10", launched.run_id, "0", "0")
    assert out.slices[0].start == len(FORGED) - 10 and out.slices[0].data == FORGED[-10:]


def test_bad_arguments_are_refused(remote: Remote) -> None:
    for args in (
        ["~/.rtrain", "0", "x"],
        ["~/.rtrain", "0", "10", "r1", "0"],
        ["~/.rtrain", "0", "10", "r1", "-1", "0"],
    ):
        result = remote.run("watch", *args)
        assert result.returncode == 2, (args, result)
    out = watch(remote, "~/.rtrain", "0", "10", "../etc", "0", "0")
    assert list(out.runs) == ["../etc"]
    assert (out.runs["../etc"].state, out.runs["../etc"].detail) == ("missing", "invalid run id")


def test_gpus_and_the_runs_computing_on_them(remote: Remote, tmp_path: Path) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "nvidia-smi").write_text(render_script())
    (tools / "nvidia-smi").chmod(0o755)
    env = dict(remote.env, PATH=f"{tools}:{remote.env['PATH']}")
    launched = remote.launch(
        "import time\nprint('up', flush=True)\ntime.sleep(60)",
        env=dict(env, RTRAIN_FAKE_GPU_LOAD="1:55:1234"),
    )
    wait_for(lambda: (launched.run_dir / "train.log").read_bytes() == b"up\n", what="the trainer")
    out = watch(remote, "~/.rtrain", "1", "100", launched.run_id, "0", "0", env=env)
    # Run as root, the fake also sees loads other tests' trainers declare at the same time:
    # the GPU lines' values are theirs as much as ours, so only their shape is checked here
    # (tests/cli/test_metrics.py checks the values, on a far user of its own).
    assert [line.split(", ")[:2] for line in out.gpus] == [
        ["0", "GPU-3f1c9a52-7d04-4e8b-b1a6-000000000000"],
        ["1", "GPU-3f1c9a52-7d04-4e8b-b1a6-000000000001"],
    ]
    assert all(len(line.split(", ")) == 8 for line in out.gpus)
    assert out.gpus[1].split(", ")[6:] == ["[N/A]", "NVIDIA H100 80GB HBM3"]
    # The app lines of the run's processes (the trainer, and the wrapper that passed the
    # load on) name the run; the run's own pids, from the script's own marker search.
    ours = [line.split(", ")[:3] for run, line in out.apps if run == launched.run_id]
    assert ours and all(
        fields[1:] == ["GPU-3f1c9a52-7d04-4e8b-b1a6-000000000001", "1234"] for fields in ours
    )
    assert str(launched.pid) in [fields[0] for fields in ours]
    # GPUS=0, or no nvidia-smi: no GPU lines at all.
    assert not watch(remote, "~/.rtrain", "0", "100", launched.run_id, "0", "0", env=env).gpus
    assert not watch(remote, "~/.rtrain", "1", "100", launched.run_id, "0", "0").gpus
    remote.stop(launched)
