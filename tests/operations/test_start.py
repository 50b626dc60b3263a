"""run/start end to end against the plain sshd: what lands on the far side, and how it runs."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from rtrain.client.errors import Interrupted
from rtrain.daemon.operations.gpu_sharing import gate_file
from tests.hosts import GPU_USER
from tests.operations import trainers
from tests.operations.harness import Ops
from tests.operations.processes import pid_alive, run_pids


def test_start_ships_inputs_and_launches_detached(ops: Ops) -> None:
    run_id = ops.new_run_id()
    config = ops.file("my-config.yaml", "lr: 0.1\nepochs: 2\n")
    dataset = ops.file("data.jsonl", '{"text": "hello"}\n' * 100)
    started = ops.start(
        trainers.PROBE,
        run_id=run_id,
        config=str(config),
        dataset=str(dataset),
        command=["{python}", "-c", trainers.PROBE, "{config}", "{dataset}", "{run_dir}", "{gpus}"],
        secrets={"TRAIN_TEST_SECRET": "hunter2"},
        gpus=2,
    )
    run_dir = ops.far_run_dir(run_id)
    assert started.run.state == "running"
    assert started.run.remote_dir == str(run_dir)
    # gpus=2 on a host with GPUs: the run's first step, the GPU gate, travels with the inputs,
    # but as rtrain's own file it is not counted among what the user shipped.
    assert started.uploaded_bytes == config.stat().st_size + dataset.stat().st_size
    assert (run_dir / "gpu_gate.sh").read_bytes() == gate_file()

    # The run dir is private, the inputs arrived intact under their names.
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    assert (run_dir / "config.yaml").read_bytes() == config.read_bytes()
    assert (run_dir / "data.jsonl").read_bytes() == dataset.read_bytes()
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["run_id"] == run_id

    probe = json.loads(ops.wait_file(run_dir / "probe.json"))
    leader = int((run_dir / ".rtrain" / "train.pid").read_text())
    # The pid file names the session leader; the trainer lives in that session, detached.
    assert started.pid == leader
    assert probe["sid"] == leader
    assert probe["cwd"] == str(run_dir)
    assert probe["stdin"] == "/dev/null"
    assert probe["marker"] == run_id
    assert probe["unbuffered"] == "1"
    assert probe["argv"] == ["config.yaml", "data.jsonl", str(run_dir), "2"]
    # A secret reaches the trainer's environment, never a file or a command line.
    assert probe["secret_sha"] == hashlib.sha256(b"hunter2").hexdigest()
    for path in run_dir.iterdir():
        if path.is_file():
            assert b"hunter2" not in path.read_bytes(), path
    for pid in run_pids(run_id):
        assert b"hunter2" not in Path(f"/proc/{pid}/cmdline").read_bytes()

    assert ops.status(run_id).state == "running"


def test_default_demo_trainer_runs_to_completion(ops: Ops) -> None:
    run_id = ops.new_run_id()
    config = ops.file("config.yaml", "epochs: 1\nsteps: 3\n")
    started = ops.start(run_id=run_id, config=str(config))
    assert started.run.state == "running"
    run_dir = ops.far_run_dir(run_id)
    assert (run_dir / "demo_trainer.py").is_file()
    result, chunks = ops.tail(run_id)
    assert result.run.state == "completed", (result.run, chunks.data)
    assert result.run.exit_code == 0
    assert chunks.data == (run_dir / "train.log").read_bytes()


def test_tilde_workdir_is_expanded_by_the_remote_shell(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.STEPS, run_id=run_id)
    assert ops.far_run_dir(run_id).is_dir()
    # Never a directory literally called "~", on either side.
    assert not (ops.home / "~").exists()
    assert not (ops.tmp / "~").exists()


def test_a_run_id_that_exists_on_the_host_is_refused(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.STEPS, run_id=run_id)
    error = ops.error(
        "run/start",
        {
            "host": "plain",
            "runId": run_id,
            "workdir": ops.workdir,
            "config": str(ops.file("c.yaml", "x: 1\n")),
            "command": ["{python}", "-c", "print('second')"],
        },
    )
    assert error.kind == "run_exists"

    # Also when this daemon never heard of it: the host itself is the judge.
    stranger = ops.new_run_id("foreign")
    made = ops.hosts.run_as(GPU_USER, ["mkdir", "-p", "-m", "700", str(ops.far_run_dir(stranger))])
    assert made.returncode == 0, made.stderr
    error = ops.error(
        "run/start",
        {
            "host": "plain",
            "runId": stranger,
            "workdir": ops.workdir,
            "config": str(ops.file("c.yaml", "x: 1\n")),
            "command": ["{python}", "-c", "print('mine')"],
        },
    )
    assert error.kind == "run_exists"
    assert list(ops.far_run_dir(stranger).iterdir()) == []


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        ({"config": "/nonexistent/config.yaml"}, "local_file_missing"),
        ({"dataset": "/nonexistent/data.jsonl"}, "local_file_missing"),
        ({"command": []}, "invalid_command"),
        ({"command": ["{python}", "{nope}"]}, "invalid_command"),
        ({"command": ["{python}", "{dataset}"]}, "invalid_command"),
        ({"secrets": {"BAD NAME": "x"}}, "invalid_secret"),
        ({"secrets": {"RTRAIN_RUN_ID": "other"}}, "invalid_secret"),
        ({"python": "python3; id"}, "invalid_command"),
    ],
)
def test_bad_start_params_are_refused_before_any_ssh(
    ops: Ops, change: dict[str, Any], kind: str
) -> None:
    run_id = ops.new_run_id()
    params = {
        "host": "plain",
        "runId": run_id,
        "workdir": ops.workdir,
        "config": str(ops.file("config.yaml", "a: 1\n")),
        "command": ["{python}", "-c", "print(1)"],
        **change,
    }
    assert ops.error("run/start", params).kind == kind
    assert not ops.far_workdir.exists()
    plain = [h for h in ops.request("hosts/list").hosts if h.alias == "plain"]
    assert not plain or plain[0].connection == "disconnected"


@pytest.mark.parametrize("change", [{"gpus": -3}, {"gpus": 100000}, {"nodes": 0}])
def test_a_count_out_of_range_is_invalid_params_and_starts_nothing(
    ops: Ops, change: dict[str, Any]
) -> None:
    """The fault: a raw run/start with `gpus: -3` was accepted and the run started."""
    params = {
        "host": "plain",
        "runId": ops.new_run_id(),
        "workdir": ops.workdir,
        "command": ["{python}", "-c", "print(1)"],
        **change,
    }
    error = ops.error("run/start", params)
    assert (error.code, error.kind) == (-32602, None), error
    assert not ops.far_workdir.exists()


def test_start_reports_upload_progress(ops: Ops) -> None:
    run_id = ops.new_run_id()
    dataset = ops.tmp / "big.bin"
    dataset.write_bytes(bytes(range(256)) * 8192)  # 2 MiB
    progress = []
    result = ops.client().request(
        "run/start",
        {
            "host": "plain",
            "runId": run_id,
            "workdir": ops.workdir,
            "config": str(ops.file("config.yaml", "a: 1\n")),
            "dataset": str(dataset),
            "command": ["{python}", "-c", "print('ok')"],
            "progressToken": "up-1",
        },
        on_notification=lambda method, params: (
            progress.append(params) if method == "$/progress" else None
        ),
    )
    assert result.run.state == "running"
    assert [p.value.kind for p in progress][0] == "begin"
    assert progress[-1].value.kind == "end"
    assert all(p.token == "up-1" for p in progress)
    end = progress[-1].value
    assert end.done_bytes == end.total_bytes == result.uploaded_bytes
    far = ops.far_run_dir(run_id) / "big.bin"
    assert far.read_bytes() == dataset.read_bytes()


def test_start_returns_while_the_trainer_runs(ops: Ops) -> None:
    run_id = ops.new_run_id()
    started = ops.start(trainers.SLEEPER, run_id=run_id)
    assert pid_alive(started.pid)
    assert run_pids(run_id)
    assert ops.status(run_id).state == "running"


def test_a_start_cancelled_while_shipping_leaves_nothing_and_frees_its_run_id(ops: Ops) -> None:
    run_id = ops.new_run_id()
    dataset = ops.tmp / "big.bin"
    dataset.write_bytes(os.urandom(32 * 1024 * 1024))
    params = {
        "host": "plain",
        "runId": run_id,
        "workdir": ops.workdir,
        "config": str(ops.file("config.yaml", "a: 1\n")),
        "dataset": str(dataset),
        "command": ["{python}", "-c", "print('ok')"],
        "progressToken": "up",
    }

    def ctrl_c_once_shipping(method: str, params: Any) -> None:
        if method == "$/progress" and params.value.kind == "begin":
            raise KeyboardInterrupt  # what Ctrl-C does inside the CLI's wait

    client = ops.client()
    with pytest.raises(Interrupted) as caught:
        client.request(
            "run/start", params, on_notification=ctrl_c_once_shipping, cancel_on_interrupt=True
        )
    assert caught.value.result is None, "the launch had begun: the file shipped too fast"
    # Nothing of it is left: not on the host, not in the registry.
    assert not ops.far_run_dir(run_id).exists()
    assert ops.request("runs/list", {"host": "plain"}).runs == []
    # The run id was not burned: the same start goes through.
    started = client.request("run/start", {**params, "progressToken": None})
    assert started.run.state == "running"
    assert (ops.far_run_dir(run_id) / "big.bin").read_bytes() == dataset.read_bytes()


def test_a_run_never_starts_before_it_was_created(ops: Ops) -> None:
    # The host says when it started in whole seconds; rtrain created it a fraction earlier.
    run_id = ops.new_run_id()
    started = ops.start(trainers.SLEEPER, run_id=run_id).run
    assert started.created_at is not None and started.started_at is not None
    assert started.started_at >= started.created_at, started
    listed = ops.status(run_id)
    assert listed.started_at >= listed.created_at, listed
