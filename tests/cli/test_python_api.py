"""The Python API (`rtrain.RemoteRunner`) end to end, and reattaching from host + run id alone."""

from __future__ import annotations

import time

import pytest

from rtrain import RemoteError, RemoteRunner
from tests.cli.conftest import OUTPUTS_TRAINER, WAIT_S, WAITING_TRAINER, Cli


def test_runner_preflight_start_tail_status_fetch(cli: Cli) -> None:
    runner = RemoteRunner(alias="plain", workdir=cli.workdir)
    verdict = runner.preflight(expect_gpus=2)
    assert verdict.ok, verdict.why_not()
    assert (verdict.transport, verdict.why_not()) == ("exec", "ready")
    assert verdict.gpus == ["NVIDIA H100 80GB HBM3"] * 2
    too_many = runner.preflight(expect_gpus=3)
    assert not too_many.ok
    assert "needs 3 GPU(s), found 2" in too_many.why_not()

    config = cli.file("cfg.yaml", "epochs: 1\n")
    run_id = cli.new_run_id()
    run = runner.start(config, run_id=run_id, gpus=0, command=["{python}", "-c", OUTPUTS_TRAINER])
    assert (run.host, run.run_id) == ("plain", run_id)
    assert run.remote_dir == str(cli.far_run_dir(run_id))

    lines: list[str] = []
    assert runner.tail(run, on_line=lines.append) == "completed"
    assert lines == ["step 1 | loss 1.0", "saved lora_model/"]
    assert runner.status(run) == "completed"

    fetched = runner.fetch(run, remote_rel="lora_model", dest=cli.cwd / "out")
    far = cli.far_run_dir(run_id)
    assert sorted(p.relative_to(cli.cwd / "out") for p in fetched) == sorted(
        p.relative_to(far) for p in (far / "lora_model").rglob("*") if p.is_file()
    )
    for path in fetched:
        assert path.read_bytes() == (far / path.relative_to(cli.cwd / "out")).read_bytes()

    with pytest.raises(RemoteError) as refused:
        runner.status("$(id)")
    assert refused.value.kind == "invalid_run_id"


def test_a_runner_rebuilt_from_host_and_run_id_reattaches(cli: Cli) -> None:
    config = cli.file("cfg.yaml", "epochs: 1\n")
    run_id = cli.new_run_id()
    first = RemoteRunner(alias="plain", workdir=cli.workdir)
    first.start(config, run_id=run_id, gpus=0, command=["{python}", "-c", WAITING_TRAINER])
    del first
    # Another process's view: the daemon too is gone and comes back on the next call.
    assert cli("daemon", "stop").code == 0
    assert cli.daemon.daemon_pids() == []

    again = RemoteRunner(alias="plain")
    assert again.status(run_id) == "running"
    lines: list[str] = []

    def on_line(line: str) -> None:
        lines.append(line)
        if line == "step 1 | loss 1.0":
            cli.finish(run_id)

    assert again.tail(run_id, on_line=on_line) == "completed"
    assert lines == ["step 1 | loss 1.0", "step 2 | loss 0.5"]


def test_runner_stop(cli: Cli) -> None:
    config = cli.file("cfg.yaml", "epochs: 1\n")
    runner = RemoteRunner(alias="plain", workdir=cli.workdir)
    run = runner.start(
        config, run_id=cli.new_run_id(), gpus=0, command=["{python}", "-c", WAITING_TRAINER]
    )
    assert runner.status(run) == "running"
    assert runner.stop(run) is True
    assert runner.status(run) == "stopped"
    assert runner.stop(run) is False


def test_runner_ships_code_datasets_env_setup_then_restarts_and_removes(cli: Cli) -> None:
    project = cli.cwd / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (project / "train.py").write_text(
        "import os, pathlib, pkg\n"
        "print('rows', len(open('rows.jsonl').read().splitlines()),"
        " 'shards', sorted(os.listdir('shards')), 'mode', os.environ['MODE'],"
        " 'setup', pathlib.Path('setup-ran').exists(), flush=True)\n"
    )
    (project / ".gitignore").write_text("*.bin\n")
    (project / "weights.bin").write_text("no")
    shards = cli.cwd / "shards"
    shards.mkdir()
    (shards / "a.txt").write_text("a")
    rows = cli.file("rows.jsonl", "{}\n{}\n")
    runner = RemoteRunner(alias="plain", workdir=cli.workdir)
    run_id = cli.new_run_id()
    run = runner.start(
        cli.file("cfg.yaml", "x: 1\n"),
        run_id=run_id,
        gpus=0,
        command=["{python}", "train.py"],
        code_dir=project,
        datasets=[rows, shards],
        env={"MODE": "api"},
        setup="touch setup-ran",
    )
    lines: list[str] = []
    assert runner.tail(run, on_line=lines.append) == "completed"
    assert lines == ["rows 2 shards ['a.txt'] mode api setup True"]
    assert not (cli.far_run_dir(run_id) / "weights.bin").exists()

    again = runner.restart(run_id)
    assert again.run_id == run_id
    lines.clear()
    assert runner.tail(again, on_line=lines.append) == "completed"
    assert lines[-1] == "rows 2 shards ['a.txt'] mode api setup True"
    assert any(line.startswith("==> rtrain: attempt 2 of") for line in lines)

    assert runner.remove(run_id) == [run_id]
    assert not cli.far_run_dir(run_id).exists()
    with pytest.raises(RemoteError):
        runner.status(run_id)


def test_runner_then_fetch_and_terminate_guard_and_terminate_now(cli: Cli) -> None:
    config_toml = cli.daemon.config / "rtrain" / "config.toml"
    config_toml.parent.mkdir(parents=True, exist_ok=True)
    config_toml.write_text(
        f'[hosts.plain]\nterminate = "echo terminated >> {cli.workdir}/terminated"\n'
    )
    terminated = cli.far_workdir / "terminated"
    runner = RemoteRunner(alias="plain", workdir=cli.workdir)
    config = cli.file("cfg.yaml", "epochs: 1\n")
    run = runner.start(
        config,
        run_id=cli.new_run_id(),
        gpus=0,
        command=["{python}", "-c", OUTPUTS_TRAINER],
        then_fetch="lora_model",
        then_fetch_into=cli.cwd / "out",
        then_terminate=True,
    )
    assert runner.tail(run, on_line=lambda _line: None) == "completed"
    deadline = time.monotonic() + WAIT_S
    while not terminated.exists():
        assert time.monotonic() < deadline, "the host was never terminated"
        time.sleep(0.1)
    assert (cli.cwd / "out" / "lora_model" / "adapter.txt").read_bytes() == b"0123456789"
    assert terminated.read_text() == "terminated\n"

    # The guard, armed, read and disarmed; bad words refused before anything is sent.
    with pytest.raises(ValueError):
        runner.guard(idle="30", then="true")
    with pytest.raises(ValueError):
        runner.guard(idle="30m")
    armed = runner.guard(idle="1h", then="true")
    assert (armed.guard.armed, armed.guard.idle_seconds, armed.guard.command) == (
        True,
        3600,
        "true",
    )
    assert runner.guard().guard.armed
    assert not runner.guard(off=True).guard.armed

    # Terminate now: refused while a run runs, unless forced.
    busy = runner.start(
        config, run_id=cli.new_run_id(), gpus=0, command=["{python}", "-c", WAITING_TRAINER]
    )
    cli.wait_far_log(busy.run_id, "step 1")
    with pytest.raises(RemoteError) as refused:
        runner.terminate()
    assert refused.value.kind == "host_busy"
    forced = runner.terminate(force=True)
    assert (forced.outcome, forced.exit_code) == ("ended", 0)
    assert terminated.read_text() == "terminated\nterminated\n"
    cli.finish(busy.run_id)
