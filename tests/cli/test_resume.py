"""The demo trainer stopped through the CLI resumes from its checkpoint.

rtrain never launches twice in one run dir (a run id is never reused), so the second launch is
a new run whose command enters the first run's directory and starts the demo trainer there
with the config the second run shipped (the same model, no pause per step), as a user resuming
by hand would.
"""

from __future__ import annotations

import json
import re

from tests.cli.conftest import Cli

SLOW_DEMO_CONFIG = """\
steps: 60
log_every: 5
checkpoint_every: 10
context: 3
hidden: 16
backend: python
sleep_per_step: 0.1
"""
FAST_DEMO_CONFIG = SLOW_DEMO_CONFIG.replace("sleep_per_step: 0.1", "sleep_per_step: 0")

# argv: DIR COMMAND...: run COMMAND in DIR, in this process (so the run's pid file stays true).
RUN_IN_DIR = "import os, sys; os.chdir(sys.argv[1]); os.execvp(sys.argv[2], sys.argv[2:])"


def test_stopped_demo_run_resumes_from_its_checkpoint(cli: Cli) -> None:
    first = cli.new_run_id("first")
    cli.file("cfg.yaml", SLOW_DEMO_CONFIG)
    cli.file("data.jsonl", '{"prompt": "Q: up?\\nA:", "completion": " down"}\n' * 30)
    cli.start(first, dataset="data.jsonl")
    cli.wait_far_log(first, "step 10 |")

    stopped = cli("stop", "plain", first)
    assert (stopped.code, stopped.out) == (0, f"stopped {first} on plain\n"), stopped
    assert cli("status", "plain", first).out == "stopped\n"
    log = (cli.far_run_dir(first) / "train.log").read_text()
    stopped_at = re.search(r"demo_trainer: stopped by SIGTERM at step (\d+)", log)
    assert stopped_at, log
    step = int(stopped_at.group(1))
    assert 10 <= step < 60

    first_dir = cli("status", "plain", first, "--json").json()["remoteDir"]
    second = cli.new_run_id("second")
    cli.file("cfg.yaml", FAST_DEMO_CONFIG)
    done = cli(
        "start", "plain", "-c", "cfg.yaml", "--run-id", second, "--workdir", cli.workdir,
        "--gpus", "0", "--", "{python}", "-c", RUN_IN_DIR, first_dir,
        "{python}", "demo_trainer.py",
        "--config", "{run_dir}/config.yaml", "--dataset", "data.jsonl",
    )  # fmt: skip
    assert done.code == 0, done
    assert f"resuming from step {step}" in done.out_lines, done
    assert done.out_lines[-1].startswith("done: 60 steps, final loss"), done
    # It counted on from the checkpoint: no step at or before it was trained again.
    trained = [int(m) for m in re.findall(r"^step (\d+) \|", done.out, re.MULTILINE)]
    assert trained and min(trained) > step, trained
    assert done.err_lines[-1] == f"{second} on plain: completed"

    fetched = cli("fetch", "plain", first, "lora_model/adapter_config.json", "-o", "out")
    assert fetched.code == 0, fetched
    assert json.loads((cli.cwd / "out" / "adapter_config.json").read_text())["steps"] == 60
