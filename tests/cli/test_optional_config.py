"""`-c` is optional: a command of the user's own needs no config.yaml (the fault: `-c` was
mandatory, so a project with its own config shipped a Python file a second time as
config.yaml). `{config}` without one, and the demo trainer without one, are refused in one
sentence before anything reaches the host."""

from __future__ import annotations

import pytest

from tests.cli.conftest import Cli


def test_a_start_without_a_config_runs_the_users_command(cli: Cli) -> None:
    run_id = cli.new_run_id()
    done = cli(
        "start", "plain", "--run-id", run_id, "--workdir", cli.workdir, "--gpus", "0",
        "--no-follow", "--", "{python}", "-c", "import os; print(sorted(os.listdir('.')))",
    )  # fmt: skip
    assert done.code == 0, done
    cli.wait_state("plain", run_id, "completed")
    log = (cli.far_run_dir(run_id) / "train.log").read_text()
    assert "config.yaml" not in log, log


@pytest.mark.parametrize(
    ("command", "sentence"),
    [
        (["--", "{python}", "train.py", "--config", "{config}"],
         "rtrain: the command uses {config} but no config was given (-c)."),
        ([], "rtrain: rtrain's demo trainer needs a config (-c config.yaml); or give your own "
             "command after `--`."),
    ],
    ids=["placeholder", "demo-trainer"],
)  # fmt: skip
def test_what_needs_a_config_is_refused_without_one(
    cli: Cli, command: list[str], sentence: str
) -> None:
    run_id = cli.new_run_id()
    done = cli("start", "plain", "--run-id", run_id, "--workdir", cli.workdir, *command)
    assert done.code == 2, done
    assert done.err_lines == [sentence], done
    assert not cli.far_run_dir(run_id).exists()
