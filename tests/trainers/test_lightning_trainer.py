"""A real lightning.Trainer (tests/projects/lightning_trainer: a tiny character model) on the
suite's sshd: rtrain's metrics are the losses Lightning logged, a restart with the documented
recipe (`--ckpt_path=last`) resumes from `last.ckpt`, also in the middle of an epoch, and the
fetched checkpoint loads."""

from __future__ import annotations

import pytest
import torch

from tests.cli.conftest import Cli
from tests.trainers.trainer_runs import (
    assert_same_series,
    completed,
    far_json,
    series,
    start,
)


def losses(records: list[dict[str, float]]) -> dict[int, float]:
    return {int(record["step"]): record["loss"] for record in records}


# Two real training runs and a restart, each allowed RUN_S (trainer_runs.py).
@pytest.mark.timeout(900)
def test_lightning_metrics_resume_and_checkpoint(cli: Cli, trainers_python: str) -> None:
    run_id = cli.new_run_id("pl")
    # 10 batches an epoch, a checkpoint every 5 steps: the run stops in its second epoch.
    start(cli, run_id, "lightning_trainer", trainers_python, "{python}", "train.py",
          "--max_steps=15")  # fmt: skip
    completed(cli, run_id)
    first = losses(far_json(cli, run_id, "losses.json"))
    assert sorted(first) == list(range(1, 16))
    assert_same_series(series(cli, run_id, "train_loss"), first)

    done = cli(
        "restart", "plain", run_id, "--no-follow", "--append", "--",
        "--ckpt_path=last", "--max_steps=30",
    )  # fmt: skip
    assert done.code == 0, done
    completed(cli, run_id)
    # The second attempt began at last.ckpt's step, in the middle of the second epoch.
    assert far_json(cli, run_id, "begin_steps.json") == [0, 15]
    history = losses(far_json(cli, run_id, "losses.json"))
    assert sorted(history) == list(range(1, 31))
    assert {step: history[step] for step in first} == first, "the resume rewrote the past"
    assert_same_series(series(cli, run_id, "train_loss"), history)

    fetched = cli("fetch", "plain", run_id, "checkpoints/last.ckpt", "-o", "home")
    assert fetched.code == 0, fetched
    assert fetched.err_lines[-1].endswith("all checksums matched"), fetched
    checkpoint = torch.load(cli.cwd / "home" / "last.ckpt", weights_only=True)
    assert checkpoint["global_step"] == 30
    weights = checkpoint["state_dict"]
    assert sorted(weights) == ["embed.weight", "head.bias", "head.weight"]
    assert all(torch.isfinite(tensor).all() for tensor in weights.values())


@pytest.mark.timeout(600)
def test_lightning_progress_is_over_all_epochs_and_an_ended_run_has_no_eta(
    cli: Cli, trainers_python: str
) -> None:
    """TQDMProgressBar counts one epoch's batches (`Epoch 2: 10/10`); the command says
    `--max_epochs=3`, so the run's progress is over the 3 epochs of 10 batches."""
    run_id = cli.new_run_id("plep")
    start(cli, run_id, "lightning_trainer", trainers_python, "{python}", "train.py",
          "--max_epochs=3", "--max_steps=1000")  # fmt: skip
    completed(cli, run_id)
    status = cli("status", "plain", run_id, "--json").json()
    progress = status["progress"]
    assert (progress["n"], progress["total"]) == (30, 30), status
    assert progress.get("eta") is None, progress
    shown = cli("metrics", "plain", run_id)
    assert shown.code == 0, shown
    [line] = [line for line in shown.out_lines if line.startswith("progress")]
    assert "(30/30)" in line and "ETA" not in line, line
