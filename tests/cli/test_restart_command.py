"""restart with a command of its own: trainers that resume only when told (nanoGPT's
`--init_from=resume`). The fault: restart took no new arguments, so it started from scratch
and overwrote the run's checkpoint with an earlier one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.conftest import Cli

PROJECT = Path(__file__).parent.parent / "projects" / "nanogpt_shaped"


def checkpoint(cli: Cli, run_id: str) -> int:
    data = json.loads((cli.far_run_dir(run_id) / "out" / "ckpt.json").read_text())
    return int(data["iter_num"])


def attempts(cli: Cli, run_id: str) -> list[int]:
    return [a["number"] for a in cli("status", "plain", run_id, "--json").json()["attempts"]]


def started(cli: Cli, run_id: str) -> None:
    shutil.copytree(PROJECT, cli.cwd / "proj")
    done = cli(
        "start", "plain", "--code", "proj", "--run-id", run_id, "--workdir", cli.workdir,
        "--gpus", "0", "--no-follow", "--", "{python}", "train.py", "--max_iters=10",
    )  # fmt: skip
    assert done.code == 0, done
    cli.wait_state("plain", run_id, "completed")
    assert checkpoint(cli, run_id) == 10


def test_restart_appends_the_resume_flag_and_continues_from_the_checkpoint(cli: Cli) -> None:
    run_id = cli.new_run_id()
    started(cli, run_id)

    shown = cli(
        "restart", "plain", run_id, "--dry-run", "--append", "--",
        "--init_from=resume", "--max_iters=20",
    )  # fmt: skip
    assert shown.code == 0, shown
    assert shown.out_lines[0] == f"would restart {run_id} on plain as attempt 2:", shown
    assert shown.out_lines[1].endswith(
        "train.py --max_iters=10 --init_from=resume --max_iters=20"
    ), shown
    assert attempts(cli, run_id) == [1], "the dry run started an attempt"

    done = cli("restart", "plain", run_id, "--append", "--", "--init_from=resume", "--max_iters=20")
    assert done.code == 0, done
    assert "Resuming training from out (iter 10)" in done.out, done
    assert "iter 11: loss" in done.out and "iter 1: loss" not in done.out, done
    assert checkpoint(cli, run_id) == 20

    # A plain restart runs the last attempt's command again: it resumes too.
    again = cli("restart", "plain", run_id, "--dry-run", "--json").json()
    assert again["command"][-2:] == ["--init_from=resume", "--max_iters=20"], again
    assert again["attempt"] == 3 and again["dryRun"] is True


def test_restart_with_a_new_command_fills_its_placeholders(cli: Cli) -> None:
    run_id = cli.new_run_id()
    started(cli, run_id)
    done = cli(
        "restart", "plain", run_id, "--no-follow", "--",
        "{python}", "train.py", "--init_from=resume", "--max_iters=15",
    )  # fmt: skip
    assert done.code == 0, done
    cli.wait_state("plain", run_id, "completed")
    assert checkpoint(cli, run_id) == 15
    status = cli("status", "plain", run_id, "--json").json()
    assert [a["number"] for a in status["attempts"]] == [1, 2], status
    assert status["command"][-2:] == ["--init_from=resume", "--max_iters=15"], status
    assert "{python}" not in status["command"], status


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (["--", "{python}", "train.py", "--config", "{config}"],
         "rtrain: the command uses {config} but no config was given (-c)."),
        (["--", "{python}", "{bogus}"],
         "rtrain: unknown placeholder in '{bogus}'; known: {python}, {config}, {dataset}, "
         "{run_dir}, {gpus}, {torchrun}."),
        (["--append"], "rtrain: --append adds the words after `--` to the last command; "
                       "give some."),
    ],
    ids=["config-not-shipped", "unknown-placeholder", "append-nothing"],
)  # fmt: skip
def test_a_restart_command_that_cannot_run_is_refused_and_nothing_starts(
    cli: Cli, args: list[str], sentence: str
) -> None:
    run_id = cli.new_run_id()
    started(cli, run_id)
    done = cli("restart", "plain", run_id, *args)
    assert done.code == 2, done
    assert done.err_lines == [sentence], done
    assert attempts(cli, run_id) == [1]
