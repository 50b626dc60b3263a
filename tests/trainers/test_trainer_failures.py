"""Real trainers that raise, through their real progress bars, on the suite's sshd: the
traceback starts in the middle of a bar's line and the bar is redrawn after it at exit, yet
`status`, `runs` and config.toml's `notify` say the exception; the progress is the training
bar's where it stopped (not a checkpoint writer's `1/1`), with no time left."""

from __future__ import annotations

import time

import pytest

from tests.cli.conftest import Cli
from tests.trainers.trainer_runs import RUN_S, ended, start

CASES = {
    # transformers' Trainer, 40 steps, a checkpoint at 20 (its `Writing model shards` bar).
    "hf": ("hf_trainer", ["--max_steps=40", "--save_steps=20", "--fail_at=26"], "step 26", 40),
    # Lightning's TQDMProgressBar, epochs of 10 batches: the raise is in epoch 1; progress is
    # over the whole fit the command plans (`--max_steps=30`), not the epoch's bar.
    "pl": ("lightning_trainer", ["--max_steps=30", "--fail_at=12"], "step 12", 30),
    # Keras 3 on torch, its own bar (verbose=1): 4 epochs of 15 batches, 2 of them done.
    "keras": ("keras_trainer", ["--fail_at_epoch=3"], "epoch 3", 60),
}


def notified(cli: Cli, path_text: str) -> str:
    """The file the notify command wrote, once it is there whole."""
    deadline = time.monotonic() + RUN_S
    out = cli.cwd / "notified"
    while not any(out.glob(path_text)):
        assert time.monotonic() < deadline, f"notify never wrote {path_text}"
        time.sleep(0.1)
    return next(out.glob(path_text)).read_text()


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_trainer_that_raises_under_its_bar_says_why(
    cli: Cli, trainers_python: str, case: str
) -> None:
    project, args, where, bar_total = CASES[case]
    (cli.cwd / "notified").mkdir()
    config = cli.daemon.config / "rtrain"
    config.mkdir()
    # Written whole, then moved: the file is never seen half-written.
    (config / "config.toml").write_text(
        f'notify = \'cd {cli.cwd}/notified && env > "$RTRAIN_RUN_ID.tmp" && '
        f'mv "$RTRAIN_RUN_ID.tmp" "$RTRAIN_RUN_ID.env"\'\n'
    )
    run_id = cli.new_run_id(case)
    start(cli, run_id, project, trainers_python, "{python}", "train.py", *args)
    why = f"ValueError: the test trainer fails at {where}"

    assert ended(cli, run_id) == f"failed (exit 1, {why})"
    listed = cli("runs", "--json")
    assert listed.code == 0, listed
    [run] = [r for r in listed.json() if r["runId"] == run_id]
    assert run["reason"] == why
    env = notified(cli, f"{run_id}.env")
    assert f"RTRAIN_REASON={why}\n" in env

    shown = cli("status", "plain", run_id, "--json")
    assert shown.code == 0, shown
    progress = shown.json().get("progress")
    if bar_total is not None:
        assert progress is not None and progress["total"] == bar_total, progress
        assert 0 < progress["n"] < bar_total
    if progress is not None:
        assert progress.get("eta") is None, "an ended run has no time left"
