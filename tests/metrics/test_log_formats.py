"""Each documented metrics format, read from lines as trainers print them (docs/metrics.md)."""

from __future__ import annotations

import math

import pytest

from rtrain.daemon.metrics.log_formats import MAX_LINE, Progress, read_line


def values(line: str) -> dict[str, float]:
    reading = read_line(line)
    assert reading is not None, line
    return reading.values


def test_rtrains_own_step_lines() -> None:
    assert values("step 10 | loss 3.2145 | lr 0.01") == {"step": 10, "loss": 3.2145, "lr": 0.01}
    assert values("step 7 | loss: 1e-3 | acc=0.5") == {"step": 7, "loss": 0.001, "acc": 0.5}
    # A line that only looks like one: every field must be `name number`.
    assert read_line("step 1 | saving the model") is None
    assert read_line("step 1") is None


def test_python_dicts_as_hf_trainer_prints_them() -> None:
    line = "{'loss': 1.2345, 'grad_norm': 0.5, 'learning_rate': 2e-05, 'epoch': 0.5}"
    assert values(line) == {"loss": 1.2345, "grad_norm": 0.5, "learning_rate": 2e-05, "epoch": 0.5}
    got = values("{'eval_loss': nan, 'eval_runtime': 1.5, 'epoch': 1.0}")
    assert math.isnan(got["eval_loss"]) and got["eval_runtime"] == 1.5
    assert values("{'train_runtime': 12.3, 'train_loss': 0.9, 'note': 'x'}") == {
        "train_runtime": 12.3,
        "train_loss": 0.9,
    }


def test_json_objects_numeric_top_level_fields_only() -> None:
    line = '{"step": 3, "loss": 1.5, "ok": true, "tag": "x", "nested": {"a": 1}, "big": 1e300}'
    assert values(line) == {"step": 3, "loss": 1.5, "big": 1e300}
    assert read_line('{"only": "text"}') is None
    assert read_line("[1, 2, 3]") is None


@pytest.mark.parametrize(
    ("line", "progress", "postfix"),
    [
        (
            "Epoch 1:  45%|####5     | 45/100 [00:12<00:15,  3.61it/s, loss=0.5, v_num=0]",
            Progress(n=45, total=100, rate=3.61, remaining=15, elapsed=12),
            # Lightning's logger version is no metric.
            {"loss": 0.5},
        ),
        (
            " 10%|█         | 10/100 [01:02:03<1:00:00,  9.85it/s]",
            Progress(n=10, total=100, rate=9.85, remaining=3600, elapsed=3723),
            {},
        ),
        (
            "  5%|5  | 5/100 [00:10<03:10,  2.00s/it]",
            Progress(n=5, total=100, rate=0.5, remaining=190, elapsed=10),
            {},
        ),
        ("123it [00:05, 24.1it/s]", Progress(n=123, rate=24.1, elapsed=5), {}),
        (
            "  0%|          | 0/3 [00:00<?, ?it/s]",
            Progress(n=0, total=3, rate=None, remaining=None, elapsed=0),
            {},
        ),
    ],
)
def test_tqdm_bars(line: str, progress: Progress, postfix: dict[str, float]) -> None:
    reading = read_line(line)
    assert reading is not None
    assert reading.progress == progress
    assert reading.values == postfix


def test_a_bars_epoch_and_a_bar_drawn_under_another() -> None:
    lightning = read_line("Epoch 3:  40%|████      | 4/10 [00:01<00:02,  2.50it/s, loss=2.3]")
    resumed = read_line("Training: |          | 6/? [00:00<00:00, 76.27it/s, train_loss=1.260]")
    assert lightning is not None and lightning.epoch == 3 and not lightning.nested
    assert resumed is not None and resumed.epoch is None and resumed.values == {"train_loss": 1.26}
    assert resumed.progress == Progress(n=6, rate=76.27, remaining=0, elapsed=0)
    # tqdm draws a bar at position 1 (transformers' checkpoint writer, an evaluation) on the
    # next line and moves the cursor back up.
    shards = read_line("Writing model shards:  0%|          | 0/1 [00:00<?, ?it/s]\x1b[A")
    assert shards is not None and shards.nested and shards.progress is not None
    main = read_line(" 55%|█████▌    | 11/20 [00:06<00:04,  1.88it/s]")
    assert main is not None and not main.nested


def test_lines_that_say_nothing_and_lines_too_long_to_look_at() -> None:
    for line in ("", "loading the model", "| step | loss |", "{not a dict}", "100/s is fast"):
        reading = read_line(line)
        assert reading is None or (not reading.values and reading.progress is None), line
    assert read_line("step 1 | loss 2.0 | pad " + "x" * MAX_LINE) is None


def test_a_json_string_stays_a_string_a_python_dicts_quoted_number_is_a_number() -> None:
    assert values('{"run": "42", "loss": 0.5}') == {"loss": 0.5}
    assert values("{'run': 'r42', 'loss': '0.5'}") == {"loss": 0.5}
