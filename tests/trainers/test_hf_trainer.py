"""A real transformers Trainer (tests/projects/hf_trainer: a 2-layer GPT-2 from a config) on
the suite's sshd: rtrain's metrics are the losses the Trainer logged, a restart with the
documented recipe resumes from its last checkpoint, and the fetched checkpoint loads."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.cli.conftest import Cli
from tests.trainers.trainer_runs import (
    assert_same_series,
    completed,
    far_json,
    series,
    start,
)

# Loads a fetched checkpoint as a user would, with the far venv's python (the test's own
# python has no transformers).
LOAD = """
import json, sys
from transformers import GPT2LMHeadModel
model = GPT2LMHeadModel.from_pretrained(sys.argv[1])
print(json.dumps({"layers": model.config.n_layer, "parameters": model.num_parameters()}))
"""


def losses(log_history: list[dict[str, float]]) -> dict[int, float]:
    return {int(entry["step"]): entry["loss"] for entry in log_history if "loss" in entry}


# Two real training runs and a restart, each allowed RUN_S (trainer_runs.py).
@pytest.mark.timeout(900)
def test_hf_trainer_metrics_resume_and_checkpoint(cli: Cli, trainers_python: str) -> None:
    run_id = cli.new_run_id("hf")
    start(cli, run_id, "hf_trainer", trainers_python, "{python}", "train.py", "--max_steps=20")
    completed(cli, run_id)
    first = losses(far_json(cli, run_id, "trainer_log.json"))
    assert sorted(first) == list(range(1, 21))
    assert_same_series(series(cli, run_id, "loss"), first)

    done = cli(
        "restart", "plain", run_id, "--no-follow", "--append", "--",
        "--resume_from_checkpoint=True", "--max_steps=30",
    )  # fmt: skip
    assert done.code == 0, done
    completed(cli, run_id)
    # The second attempt began at the last checkpoint's step, not from scratch.
    assert far_json(cli, run_id, "begin_steps.json") == [0, 20]
    history = losses(far_json(cli, run_id, "trainer_log.json"))
    assert sorted(history) == list(range(1, 31))
    assert {step: history[step] for step in first} == first, "the resume rewrote the past"
    assert_same_series(series(cli, run_id, "loss"), history)

    fetched = cli("fetch", "plain", run_id, "out/checkpoint-30", "-o", "home")
    assert fetched.code == 0, fetched
    assert fetched.err_lines[-1].endswith("all checksums matched"), fetched
    home = cli.cwd / "home" / "checkpoint-30"
    assert json.loads((home / "trainer_state.json").read_text())["global_step"] == 30
    loaded = subprocess.run(
        [trainers_python, "-c", LOAD, str(home)],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=120,
    )
    assert loaded.returncode == 0, loaded.stderr
    model = json.loads(loaded.stdout.splitlines()[-1])
    assert model["layers"] == 2 and model["parameters"] > 0, model
