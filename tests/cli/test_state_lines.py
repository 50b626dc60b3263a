"""A run's state as people read it: `status` says it on one line, the attempt on it too,
and the whole reason; `runs` keeps its STATE column short; a running run silent for a while
says since when."""

from __future__ import annotations

import os
import time

from tests.cli.conftest import WAITING_TRAINER, Cli
from tests.cli.rtrain_command import rtrain_executable
from tests.cli.tmux_terminal import Tmux

LONG = "the config names a tokenizer that is not there, " * 5
LONG_FAILURE = f"raise ValueError({LONG!r})"


def test_runs_keeps_state_short_and_status_says_it_whole_on_one_line(
    cli: Cli, terminal: Tmux
) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", LONG_FAILURE)
    whole = f"failed (exit 1, ValueError: {LONG})"
    cli.wait_state("plain", run_id, whole)

    listed = cli("runs")
    assert listed.code == 0, listed
    [row] = [line for line in listed.out_lines if line.startswith(run_id)]
    assert len(row) < 160, row
    state = row[row.index("failed") :].split("  ")[0]
    assert state.startswith("failed (exit 1, ValueError: the config names") and state.endswith(
        "…)"
    ), state
    assert len(state) <= 80, state

    restarted = cli("restart", "plain", run_id, "--no-follow")
    assert restarted.code == 0, restarted
    cli.wait_state("plain", run_id, whole)
    terminal.start(f"{rtrain_executable()} status plain {run_id}")
    shown = [line for line in terminal.wait_for("attempt 2") if line.strip()]
    # One line (the terminal wraps it, at 120 columns): state, then the attempt.
    text = "".join(line for line in shown if "sleep" not in line)
    assert text.startswith(whole) and text.endswith("attempt 2"), shown
    assert not any(line.startswith("attempt") for line in shown), shown


def test_a_running_run_that_prints_nothing_for_a_while_says_since_when(
    cli: Cli, terminal: Tmux
) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", WAITING_TRAINER)
    cli.wait_far_log(run_id, "step 1")
    status = cli("status", "plain", run_id, "--json").json()
    assert status["state"] == "running"
    # It printed a moment ago: nothing to say yet.
    assert "last output" not in cli("runs").out
    # Its log last changed two minutes ago, as the host's clock says.
    log = cli.far_run_dir(run_id) / "train.log"
    when = time.time() - 120
    os.utime(log, (when, when))
    status = cli("status", "plain", run_id, "--json").json()
    assert abs(status["lastOutputAt"] - when) < 60, status
    listed = cli("runs")
    [row] = [line for line in listed.out_lines if line.startswith(run_id)]
    assert "running (last output 2m" in row, row
    terminal.start(f"{rtrain_executable()} status plain {run_id}")
    assert any(
        line.startswith("running (last output 2m") for line in terminal.wait_for("last output")
    )
    # Piped, the state alone, as scripts compare it.
    assert cli("status", "plain", run_id).out == "running\n"
    cli.finish(run_id)
    cli.wait_state("plain", run_id, "completed")
    ended = cli("status", "plain", run_id, "--json").json()
    assert "lastOutputAt" not in ended, "only a running run is silent"
