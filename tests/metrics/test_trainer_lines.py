"""Lines as real trainers print them (transformers 4 and 5, nanoGPT, Lightning, and the
formats the general rule is for), read into the values docs/metrics.md promises."""

from __future__ import annotations

import math

import pytest

from rtrain.daemon.metrics.log_formats import read_line

CASES: list[tuple[str, dict[str, float]]] = [
    # transformers 4: Trainer's log dicts, numbers as Python prints them.
    (
        "{'loss': 2.3456, 'grad_norm': 1.234567, 'learning_rate': 4.5e-05, 'epoch': 0.27}",
        {"loss": 2.3456, "grad_norm": 1.234567, "learning_rate": 4.5e-05, "epoch": 0.27},
    ),
    (
        "{'eval_loss': 2.1, 'eval_runtime': 0.5123, 'eval_samples_per_second': 195.2, "
        "'eval_steps_per_second': 25.38, 'epoch': 1.0}",
        {
            "eval_loss": 2.1,
            "eval_runtime": 0.5123,
            "eval_samples_per_second": 195.2,
            "eval_steps_per_second": 25.38,
            "epoch": 1.0,
        },
    ),
    # transformers 5: the same dicts, each number formatted to a string.
    (
        "{'loss': '4.902', 'grad_norm': '0.5436', 'learning_rate': '0.000425', 'epoch': '0.5469'}",
        {"loss": 4.902, "grad_norm": 0.5436, "learning_rate": 0.000425, "epoch": 0.5469},
    ),
    (
        "{'train_runtime': '12.34', 'train_samples_per_second': '81.05', "
        "'train_steps_per_second': '10.13', 'train_loss': '3.456', 'epoch': '1'}",
        {
            "train_runtime": 12.34,
            "train_samples_per_second": 81.05,
            "train_steps_per_second": 10.13,
            "train_loss": 3.456,
            "epoch": 1.0,
        },
    ),
    ("{'learning_rate': '4.25e-05', 'loss': 'nan'}", {"learning_rate": 4.25e-05, "loss": math.nan}),
    # A dict of tensors, as `print(trainer.callback_metrics)` shows them.
    (
        "{'train_loss': tensor(2.3100), 'val_loss': tensor(2.2000, device='cuda:0')}",
        {"train_loss": 2.31, "val_loss": 2.2},
    ),
    # nanoGPT's train.py.
    (
        "step 0: train loss 4.2874, val loss 4.2823",
        {"step": 0, "train_loss": 4.2874, "val_loss": 4.2823},
    ),
    (
        "step 50: train loss 3.7727, val loss 3.7554",
        {"step": 50, "train_loss": 3.7727, "val_loss": 3.7554},
    ),
    (
        "iter 10: loss 3.8044, time 14.01ms, mfu 0.01%",
        {"step": 10, "loss": 3.8044, "time": 14.01, "mfu": 0.01},
    ),
    (
        "iter 0: loss 4.2649, time 29743.03ms, mfu -100.00%",
        {"step": 0, "loss": 4.2649, "time": 29743.03, "mfu": -100.0},
    ),
    # Lightning: the bar's postfix (its step is the run's to count across epochs:
    # test_run_series.py); v_num is the logger's version.
    (
        "Epoch 0:  40%|████      | 4/10 [00:01<00:02,  2.50it/s, v_num=0, train_loss=2.310]",
        {"train_loss": 2.31},
    ),
    (
        "Epoch 1: 100%|██████████| 10/10 [00:00<00:00, 30.12it/s, v_num=3, train_loss=1.950, "
        "val_loss=2.010]",
        {"train_loss": 1.95, "val_loss": 2.01},
    ),
    # Lightning's metrics after validate/test: the rich table's rows, and the plain one's.
    ("│          val_acc          │    0.8125                 │", {"val_acc": 0.8125}),
    ("│         val_loss          │    0.4530                 │", {"val_loss": 0.453}),
    ("        test_loss           2.3007333278656006", {"test_loss": 2.3007333278656006}),
    # The general rule: PyTorch's examples, Megatron, fairseq, Keras, people's own prints.
    (
        "Train Epoch: 1 [640/60000 (1%)]\tLoss: 2.283524",
        {"step": 60640, "epoch": 1, "loss": 2.283524},
    ),
    (
        "| epoch   1 |   200/ 2983 batches | lr 20.00 | ms/batch 25.53 | loss  7.62 | ppl  2045.00",
        {"step": 3183, "epoch": 1, "lr": 20.0, "ms/batch": 25.53, "loss": 7.62, "ppl": 2045.0},
    ),
    (
        " iteration      100/  500000 | consumed samples:         3200 | elapsed time per "
        "iteration (ms): 1234.5 | learning rate: 1.000E-04 | global batch size:    32 | lm loss: "
        "7.123E+00 | loss scale: 1.0 | grad norm: 2.345 |",
        {
            "step": 100,
            "consumed_samples": 3200,
            "learning_rate": 1e-4,
            "batch_size": 32,
            "lm_loss": 7.123,
            "loss_scale": 1.0,
            "grad_norm": 2.345,
        },
    ),
    (
        "epoch 001 | loss 7.613 | nll_loss 7.613 | ppl 195.7 | wps 12345 | wpb 3.2k "
        "| num_updates 100",
        {"step": 100, "epoch": 1, "loss": 7.613, "nll_loss": 7.613, "ppl": 195.7, "wps": 12345},
    ),
    (
        "100/100 [==============================] - 2s 20ms/step - loss: 0.2345 - accuracy: 0.9123",
        {"step": 100, "loss": 0.2345, "accuracy": 0.9123},
    ),
    (
        "938/938 ━━━━━━━━━━━━━━━━━━━━ 3s 3ms/step - accuracy: 0.8716 - loss: 0.4343",
        {"step": 938, "accuracy": 0.8716, "loss": 0.4343},
    ),
    ("2024-01-01 12:00:00,123 - INFO - Step 100: loss = 0.5", {"step": 100, "loss": 0.5}),
    ("INFO:__main__:step 10, loss 0.5", {"step": 10, "loss": 0.5}),
    ("I0501 12:30:45.123456 12345 train.py:120] step 7 loss=0.25", {"step": 7, "loss": 0.25}),
    (
        "Epoch 1/10, Step 100/500, Loss: 0.2345, Acc: 0.91",
        {"step": 100, "epoch": 1, "loss": 0.2345, "acc": 0.91},
    ),
    (
        "[Epoch 3][Batch 200/937] loss=0.123 lr=0.001",
        {"step": 3011, "epoch": 3, "loss": 0.123, "lr": 0.001},
    ),
    ("Epoch 3 finished with average loss 0.25", {"step": 3, "average_loss": 0.25}),
    ("Iteration 1500, loss = 0.0312", {"step": 1500, "loss": 0.0312}),
    ("global step 42 | train/loss 1.5", {"step": 42, "train/loss": 1.5}),
    ("Test set: Average loss: 0.1000, Accuracy: 9800/10000 (98%)", {"average_loss": 0.1}),
    # A count of steps says where the line stands.
    ("done: 40 steps, final loss 0.0124, saved lora_model/", {"step": 40, "final_loss": 0.0124}),
    ("loss 0.52 after 3 epochs", {"step": 3, "loss": 0.52}),
    ("\x1b[32mstep 3\x1b[0m loss \x1b[1m0.75\x1b[0m", {"step": 3, "loss": 0.75}),
]


def same(got: dict[str, float], want: dict[str, float]) -> bool:
    return got.keys() == want.keys() and all(
        (math.isnan(v) and math.isnan(got[k])) or got[k] == pytest.approx(v)
        for k, v in want.items()
    )


@pytest.mark.parametrize(("line", "want"), CASES, ids=[c[0][:40] for c in CASES])
def test_each_trainers_line_reads(line: str, want: dict[str, float]) -> None:
    reading = read_line(line)
    assert reading is not None, line
    assert same(reading.values, want), reading.values


@pytest.mark.parametrize(
    "line",
    [
        "Epoch 1/10",  # only where it stands
        "┃      Validate metric      ┃       DataLoader 0        ┃",
        "     Validate metric           DataLoader 0",
        "logging_steps=500,",  # TrainingArguments as HF's examples log them
        "num_train_epochs=3.0,",
        "Saving model checkpoint to out/checkpoint-500 at step 500",
        "loss is nan, skipping the batch",
        "{'loss': 'n/a', 'note': 'x'}",
    ],
)
def test_lines_that_name_a_loss_but_hold_no_metric(line: str) -> None:
    reading = read_line(line)
    assert reading is None or not reading.values, reading


@pytest.mark.parametrize(
    ("line", "rank"),
    [
        ("[rank1]: iter 10: loss 3.8044, time 14.01ms, mfu 0.01%", 1),
        ("[rank0]:step 50: train loss 3.7727, val loss 3.7554", 0),
        ("[default3]:{'loss': '4.902', 'epoch': '0.5'}", 3),
        (
            "[default0]:[rank0]: Epoch 0:  40%|████      | 4/10 [00:01<00:02,  2.50it/s, loss=2.3]",
            0,
        ),
    ],
)
def test_a_ranks_tag_is_taken_off_and_kept(line: str, rank: int) -> None:
    reading = read_line(line)
    assert reading is not None and reading.values, line
    assert reading.rank == rank


def test_rtrains_attempt_line_opens_an_attempt() -> None:
    reading = read_line("==> rtrain: attempt 2 of ng1 started at 2026-01-01 00:00:00 UTC <==")
    assert reading is not None and reading.attempt == 2 and not reading.values
