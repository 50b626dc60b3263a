"""`rtrain start --sync mlflow`: a real MLflow trainer on the plain host writes its file store
in the run dir; the daemon brings it home while the run trains and at its end, into this
machine's tracking URI, read back here with the mlflow package."""

from __future__ import annotations

import importlib
import site
import subprocess
import sys
import time
import typing
from pathlib import Path
from typing import Any

import pytest

from rtrain.client.cli.start_command import SYNC_TRACKERS
from rtrain.protocol.messages import SyncTracker
from tests.cli.conftest import WAIT_S, Cli

TRAINER = """
import os, time, mlflow
mlflow.set_experiment("rtrain-sync")
with mlflow.start_run(run_name="far-run"):
    mlflow.log_param("lr", 0.1)
    for step in range(3):
        mlflow.log_metric("loss", 1.0 / (step + 1), step=step)
    print("first half", flush=True)
    while not os.path.exists("finish"):
        time.sleep(0.05)
    for step in range(3, 6):
        mlflow.log_metric("loss", 1.0 / (step + 1), step=step)
print("done", flush=True)
"""


# What mlflow raises for a file it finds half written (imported by name: untyped).
MLFLOW_ERROR: type[Exception] = importlib.import_module("mlflow.exceptions").MlflowException


def test_the_cli_knows_every_tracker_the_protocol_does() -> None:
    assert SYNC_TRACKERS == typing.get_args(SyncTracker)


@pytest.fixture
def tracking_uri(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """This machine's MLflow: a tracking directory of its own, given to the daemon."""
    uri = (tmp_path / "here-mlruns").as_uri()
    for name, value in (
        ("MLFLOW_TRACKING_URI", uri),
        ("MLFLOW_ALLOW_FILE_STORE", "true"),
        ("RTRAIN_SYNC_INTERVAL", "1"),
    ):
        monkeypatch.setenv(name, value)
        cli.env[name] = value
    return uri


def losses(client: Any) -> tuple[Any, list[float]]:
    """The synced run here (None before one is) and its loss curve, by step."""
    try:
        experiment = client.get_experiment_by_name("rtrain-sync")
        runs = client.search_runs([experiment.experiment_id]) if experiment else []
        if not runs:
            return None, []
        [run] = runs
        history = client.get_metric_history(run.info.run_id, "loss")
        run = client.get_run(run.info.run_id)
    except (ValueError, OSError, MLFLOW_ERROR):
        # The importer is writing one of the store's files this moment: not yet.
        return None, []
    points = sorted(history, key=lambda m: m.step)
    return run, [round(m.value, 4) for m in points]


def wait_for_losses(client: Any, count: int) -> Any:
    deadline = time.monotonic() + WAIT_S
    while True:
        run, curve = losses(client)
        if len(curve) >= count:
            assert curve == [round(1.0 / (s + 1), 4) for s in range(count)], curve
            return run
        assert time.monotonic() < deadline, f"{count} points never arrived here: {curve}"
        time.sleep(0.2)


def test_an_mlflow_file_store_is_synced_while_it_trains_and_at_the_end(
    cli: Cli, trackers_python: str, tracking_uri: str
) -> None:
    tracking: Any = importlib.import_module("mlflow.tracking")
    client = tracking.MlflowClient(tracking_uri)
    run_id = cli.new_run_id("mlf")
    cli.start(run_id, "{python}", "-c", TRAINER, python=trackers_python, sync="mlflow")
    cli.wait_far_log(run_id, "first half")

    # While it trains: the first half is here, with its param and where it came from.
    synced = wait_for_losses(client, 3)
    assert synced.data.params == {"lr": "0.1"}
    assert synced.data.tags["rtrain.source"].startswith(f"plain:{run_id}:")
    assert synced.info.status == "RUNNING"
    # The points are here a moment before the daemon records the sync that brought them.
    deadline = time.monotonic() + WAIT_S
    while not (sync := cli("status", "plain", run_id, "--json").json()["synced"][0]).get(
        "syncedAt"
    ):
        assert time.monotonic() < deadline, f"no sync was recorded: {sync}"
        time.sleep(0.2)
    assert sync["tracker"] == "mlflow" and "metric points" in sync["summary"], sync
    said = cli("status", "plain", run_id)
    assert said.err_lines[-1].startswith("mlflow: synced "), said

    # At its end: the rest, once (no point twice), and the run's end.
    cli.finish(run_id)
    cli.wait_state("plain", run_id, "completed")
    deadline = time.monotonic() + WAIT_S
    while (run := wait_for_losses(client, 6)).info.status != "FINISHED":
        assert time.monotonic() < deadline, "the run's end never arrived here"
        time.sleep(0.2)
    assert len(losses(client)[1]) == 6
    assert len(client.search_runs([run.info.experiment_id])) == 1


def test_an_unknown_tracker_is_refused_before_anything_starts(cli: Cli) -> None:
    done = cli("start", "plain", "--sync", "neptune", "--", "python3", "-c", "print(1)")
    assert done.code == 2, done
    assert done.err_lines == ["rtrain: --sync takes mlflow, wandb, not 'neptune'."], done


def python_without(tmp_path: Path, package: str) -> Path:
    """A python of this machine with every package of this one but `package`: a venv whose
    site-packages reaches, through a .pth line, links to all of this one's entries but it."""
    venv = tmp_path / f"no-{package}"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    shared = tmp_path / f"site-without-{package}"
    shared.mkdir()
    for source in map(Path, site.getsitepackages()):
        for entry in source.iterdir():
            if not entry.name.lower().startswith(package) and not (shared / entry.name).exists():
                (shared / entry.name).symlink_to(entry)
    [own] = (venv / "lib").glob("python*/site-packages")
    (own / "shared.pth").write_text(f"{shared}\n")
    return venv / "bin" / "python"


def test_mlflow_missing_here_is_one_sentence_and_starts_nothing(cli: Cli, tmp_path: Path) -> None:
    python = python_without(tmp_path, "mlflow")
    # rtrain itself as this test runs it (an editable install's .pth is not a link's to follow).
    source = Path(importlib.import_module("rtrain").__file__ or "").parent.parent
    env = {**cli.env, "PYTHONPATH": str(source)}
    probe = [str(python), "-c", "import importlib.util as u; print(u.find_spec('mlflow'))"]
    assert subprocess.run(probe, env=env, capture_output=True, text=True).stdout == "None\n"
    run_id = cli.new_run_id("nomlf")
    done = subprocess.run(
        [str(python), "-m", "rtrain", "start", "plain", "--run-id", run_id, "--gpus", "0",
         "--workdir", cli.workdir, "--sync", "mlflow", "--no-follow", "--", "python3", "-V"],
        env=env, cwd=cli.cwd, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done
    assert done.stderr.splitlines() == [
        f"rtrain: --sync mlflow imports into this machine's mlflow, which is not installed for "
        f"{python}: pip install mlflow (nothing was started)."
    ], done
    assert not cli.far_run_dir(run_id).exists()
    assert cli("runs", "--json").json() == []


# One MLflow run per attempt, ended at once.
QUICK_TRAINER = """
import mlflow
mlflow.set_experiment("rtrain-sync")
with mlflow.start_run():
    mlflow.log_metric("loss", 0.5, step=0)
"""


def finished_runs(client: Any, count: int) -> None:
    """Wait until `count` synced runs here have ended."""
    deadline = time.monotonic() + 3 * WAIT_S
    while True:
        try:
            experiment = client.get_experiment_by_name("rtrain-sync")
            runs = client.search_runs([experiment.experiment_id]) if experiment else []
        except (ValueError, OSError, MLFLOW_ERROR):
            runs = []  # being written this moment
        ended = [run for run in runs if run.info.status == "FINISHED"]
        if len(ended) >= count:
            assert len(runs) == count, runs
            return
        assert time.monotonic() < deadline, f"{count} ended runs never arrived: {runs}"
        time.sleep(0.2)


def test_a_restarted_run_syncs_its_new_attempt_too(
    cli: Cli, trackers_python: str, tracking_uri: str
) -> None:
    tracking: Any = importlib.import_module("mlflow.tracking")
    client = tracking.MlflowClient(tracking_uri)
    run_id = cli.new_run_id("mlfre")
    cli.start(run_id, "{python}", "-c", QUICK_TRAINER, python=trackers_python, sync="mlflow")
    cli.wait_state("plain", run_id, "completed")
    finished_runs(client, 1)

    restarted = cli("restart", "plain", run_id, "--workdir", cli.workdir, "--no-follow")
    assert restarted.code == 0, restarted
    cli.wait_state("plain", run_id, "completed")
    finished_runs(client, 2)  # the second attempt's run came too, and the first only once
