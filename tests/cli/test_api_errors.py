"""The Python API raises typed errors a caller can catch without reading kinds: one class
per kind, under the class of its meaning, each still the RemoteError (with its `kind`) it
always was."""

from __future__ import annotations

import pytest

from rtrain import (
    BadRequest,
    DaemonUnavailable,
    HostNotReady,
    HostUnreachable,
    InvalidRunId,
    RemoteError,
    RemoteRunner,
    RtrainError,
    RunActive,
    RunRefused,
)
from tests.cli.conftest import WAITING_TRAINER, Cli


def test_an_unreachable_host_is_host_unreachable(cli: Cli) -> None:
    config = cli.file("cfg.yaml", "epochs: 1\n")
    with pytest.raises(HostUnreachable) as caught:
        RemoteRunner(alias="nosuch-alias").start(config, gpus=0, command=["{python}", "-c", "1"])
    assert isinstance(caught.value, RemoteError)
    assert caught.value.kind == "host_unreachable"


def test_too_few_gpus_is_host_not_ready_and_a_running_run_refuses_a_restart(cli: Cli) -> None:
    runner = RemoteRunner(alias="plain", workdir=cli.workdir)
    config = cli.file("cfg.yaml", "epochs: 1\n")
    with pytest.raises(HostNotReady) as not_ready:
        runner.start(config, run_id=cli.new_run_id(), gpus=3, command=["{python}", "-c", "1"])
    assert not_ready.value.kind == "host_not_ready"

    run_id = cli.new_run_id()
    run = runner.start(config, run_id=run_id, gpus=0, command=["{python}", "-c", WAITING_TRAINER])
    with pytest.raises(RunRefused) as refused:
        runner.restart(run)
    assert isinstance(refused.value, RunActive) and refused.value.kind == "run_active"
    with pytest.raises(RunRefused):
        runner.start(config, run_id=run_id, gpus=0, command=["{python}", "-c", "1"])
    assert runner.stop(run)

    with pytest.raises(BadRequest) as bad:
        runner.status("$(id)")
    assert type(bad.value) is InvalidRunId and bad.value.kind == "invalid_run_id"


def test_no_daemon_is_daemon_unavailable(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli("daemon", "stop").code == 0
    monkeypatch.setenv("RTRAIN_NO_SPAWN", "1")
    with pytest.raises(DaemonUnavailable) as caught:
        RemoteRunner(alias="plain").status("run-1")
    assert isinstance(caught.value, RtrainError)
