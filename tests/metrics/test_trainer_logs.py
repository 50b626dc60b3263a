"""Real trainers' logs, byte for byte as they wrote them but for the paths of their python
(tests/metrics/trainer_logs: a run of tests/projects/hf_trainer and one of lightning_trainer,
each restarted with `--append` and resumed from its checkpoint, and one of each evaluating
as it trains): every step the trainer recorded is a point at that step, with the value it
printed, however the log is cut into reads."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rtrain.daemon.metrics.run_series import RunSeries

LOGS = Path(__file__).parent / "trainer_logs"
# transformers prints 4 significant digits, Lightning's bar 3.
PRINTED = 5e-3


def recorded(name: str, what: str = "losses") -> dict[float, float]:
    losses = json.loads((LOGS / f"{name}.{what}.json").read_text())
    return {float(step): loss for step, loss in losses.items()}


def fed(log: bytes, size: int) -> RunSeries:
    run = RunSeries()
    for offset in range(0, len(log), size):
        run.feed("log", offset, log[offset : offset + size])
    run.settle()  # the run ended
    return run


def assert_series(run: RunSeries, name: str, want: dict[float, float]) -> None:
    series = run.series[name]
    got = dict(zip(series.steps, series.values, strict=True))
    assert sorted(got) == sorted(want), f"steps: {sorted(got)}"
    far = {s: (got[s], want[s]) for s in want if not math.isclose(got[s], want[s], rel_tol=PRINTED)}
    assert not far, far
    assert series.steps == sorted(series.steps), "one point a step, in order"


# Reads of 1 byte and 7 bytes cut between every dict and the bar drawn after it.
@pytest.mark.parametrize("size", [1, 7, 4096, 1 << 20])
def test_hf_trainer_dicts_are_at_the_step_of_the_bar_drawn_after_them(size: int) -> None:
    # Steps quicker than tqdm's 0.1 s: the bar drawn before dict 8 still says 7 (and before
    # dict 22 of the resumed attempt, 21); the Trainer redraws it right after the dict.
    run = fed((LOGS / "hf_trainer.log").read_bytes(), size)
    assert_series(run, "loss", recorded("hf_trainer"))
    assert run.progress is not None and (run.progress.n, run.progress.total) == (30, 30)


@pytest.mark.parametrize("size", [1, 7, 4096, 1 << 20])
def test_hf_trainer_evaluating_and_saving_as_it_trains(size: int) -> None:
    # tests/projects/hf_trainer with `eval_strategy="steps", eval_steps=5`, 12 steps, a
    # checkpoint at 6 and 12: the evaluation's bar and the checkpoint writer's are drawn
    # below the Trainer's (tqdm's position 1), each eval dict before the Trainer's bar again.
    run = fed((LOGS / "hf_trainer_eval.log").read_bytes(), size)
    assert_series(run, "loss", recorded("hf_trainer_eval"))
    assert_series(run, "eval_loss", recorded("hf_trainer_eval", "eval_losses"))


@pytest.mark.parametrize("size", [1, 7, 4096, 1 << 20])
def test_lightning_steps_count_on_across_epochs_max_steps_and_a_resume(size: int) -> None:
    # Epoch 1 of attempt 1 is cut short by max_steps (`1/5` after epochs of 10); attempt 2
    # resumes at step 15, in the middle of epoch 1, drawn as `Training: | 6/? [...]`; each
    # bar reset for a new epoch (`0/10`) still shows the last epoch's loss.
    run = fed((LOGS / "lightning_trainer.log").read_bytes(), size)
    assert_series(run, "train_loss", recorded("lightning_trainer"))


@pytest.mark.parametrize("size", [1, 7, 4096, 1 << 20])
def test_lightning_validating_after_each_epoch(size: int) -> None:
    # lightning_trainer with a validation_step logging `val_loss` (prog_bar=True), 25 steps:
    # the validation's bars are drawn under the training's, whose postfix then shows val_loss.
    run = fed((LOGS / "lightning_trainer_val.log").read_bytes(), size)
    assert_series(run, "train_loss", recorded("lightning_trainer_val"))
    validated = dict(zip(run.series["val_loss"].steps, run.series["val_loss"].values, strict=True))
    assert (validated[10], validated[20]) == (2.43, 1.69)


@pytest.mark.parametrize("size", [1, 7, 4096, 1 << 20])
def test_hf_trainer_progress_follows_the_training_bar(size: int) -> None:
    # tests/projects/hf_trainer `--max_steps=40 --save_steps=20 --eval_steps=20`: at 20 and
    # 40 an evaluation's bar (0/39 .. 39/39) and the checkpoint writer's (`Writing model
    # shards` 0/1, redrawn 1/1 in the training bar's place as it closes) come and go.
    log = (LOGS / "hf_trainer_saving.log").read_bytes()
    run = RunSeries()
    for offset in range(0, len(log), size):
        run.feed("log", offset, log[offset : offset + size])
        if run.progress is not None:
            assert run.progress.total == 40, (offset, run.progress)
    run.settle()
    assert run.progress is not None and (run.progress.n, run.progress.total) == (40, 40)
    assert_series(run, "loss", recorded("hf_trainer_saving"))
    assert_series(run, "eval_loss", recorded("hf_trainer_saving", "eval_losses"))


@pytest.mark.parametrize("size", [1, 7, 4096, 1 << 20])
def test_hf_trainer_without_bars_each_dict_is_a_point_in_print_order(size: int) -> None:
    # `--disable_tqdm --max_steps=10 --save_steps=3`: 11 dicts with no step (10 of a step's
    # loss, then the run's summary), and after each checkpoint a `Writing model shards` bar
    # of one item, which is no progress and no step.
    run = fed((LOGS / "hf_trainer_no_bar.log").read_bytes(), size)
    assert_series(run, "loss", recorded("hf_trainer_no_bar"))
    summary = run.series["train_loss"]
    assert summary.steps == [11], "the summary, printed last, is the eleventh point"
    assert run.progress is None


@pytest.mark.parametrize("size", [1, 7, 4096, 1 << 20])
@pytest.mark.parametrize("verbose", [1, 2])
def test_keras_epoch_lines_are_points_over_all_epochs(verbose: int, size: int) -> None:
    # tests/projects/keras_trainer, 4 epochs of 15 batches with a validation split: verbose=2
    # prints one line an epoch, verbose=1 redraws its bar after backspaces, each epoch
    # ending on a line with val_loss. Epoch e's last batch is step 15e.
    log = (LOGS / f"keras_verbose{verbose}.log").read_bytes()
    run = RunSeries()
    for offset in range(0, len(log), size):
        run.feed("log", offset, log[offset : offset + size])
        if run.progress is not None:
            assert run.progress.total == 60, (offset, run.progress)
    run.settle()
    losses = dict(zip(run.series["loss"].steps, run.series["loss"].values, strict=True))
    history = recorded("keras")
    # Keras prints 4 decimals: 0.0072 for 0.00716.
    printed = pytest.approx(history, rel=PRINTED, abs=5e-5)
    assert {step: losses.get(step) for step in history} == printed
    assert run.series["loss"].steps == sorted(run.series["loss"].steps)
    if verbose == 2:
        assert sorted(losses) == [15, 30, 45, 60]
    val_losses = run.series["val_loss"]
    assert val_losses.steps == [15, 30, 45, 60], "val_loss once an epoch, each kept"
    assert val_losses.values == pytest.approx(
        list(recorded("keras", "val_losses").values()), rel=PRINTED, abs=5e-5
    )
    assert run.progress is not None and (run.progress.n, run.progress.total) == (60, 60)
