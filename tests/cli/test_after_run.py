"""Train → fetch → terminate: `rtrain start --then-fetch PATH -o DIR --then-terminate`.

The host's terminate command here appends a line to a file in the far workdir, so a test
sees whether, and how often, the host would have been terminated.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from tests.cli.conftest import FAILING_TRAINER, OUTPUTS_TRAINER, WAIT_S, WAITING_TRAINER, Cli
from tests.operations.processes import process_gone


def terminate_records_its_call(cli: Cli) -> Path:
    """Give `plain` a terminate command that only records its call; where it records it."""
    config = cli.daemon.config / "rtrain" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[hosts.plain]\nterminate = "echo terminated >> {cli.workdir}/terminated"\n')
    return cli.far_workdir / "terminated"


def start_args(cli: Cli, run_id: str, trainer: str, *options: str) -> list[str]:
    cli.file("cfg.yaml", "steps: 1\n")
    return [
        "start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cli.workdir,
        "--gpus", "0", *options, "--", "{python}", "-c", trainer,
    ]  # fmt: skip


def after(cli: Cli, run_id: str) -> Any:
    done = cli("status", "plain", run_id, "--json")
    assert done.code in (0, 1, 3), done
    return done.json().get("after")


def wait_after(cli: Cli, run_id: str, stage: str) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_S
    while True:
        plan = after(cli, run_id)
        if plan is not None and plan.get("stage", "waiting") == stage:
            return dict(plan)
        assert time.monotonic() < deadline, f"{run_id}: the plan never reached {stage}: {plan}"
        time.sleep(0.2)


def same_tree(far: Path, home: Path) -> bool:
    far_files = sorted(p.relative_to(far) for p in far.rglob("*") if p.is_file())
    home_files = sorted(p.relative_to(home) for p in home.rglob("*") if p.is_file())
    return far_files == home_files and all(
        (far / name).read_bytes() == (home / name).read_bytes() for name in far_files
    )


def test_a_completed_run_is_fetched_verified_then_its_host_terminated(cli: Cli) -> None:
    terminated = terminate_records_its_call(cli)
    run_id = cli.new_run_id()
    args = start_args(
        cli, run_id, OUTPUTS_TRAINER, "--then-fetch", "lora_model", "-o", "out", "--then-terminate"
    )
    done = cli(*args)  # followed: it ends once what follows the run is over
    assert done.code == 0, done
    last = done.err_lines[-1]
    assert last.startswith("then: done: fetched lora_model into "), last
    assert "2 file(s), 2510 bytes, every sha256 checked; plain terminated" in last
    assert same_tree(cli.far_run_dir(run_id) / "lora_model", cli.cwd / "out" / "lora_model")
    assert terminated.read_text() == "terminated\n"
    plan = after(cli, run_id)
    assert (plan["stage"], plan["fetchedFiles"], plan["terminate"]) == ("done", 2, True)
    assert plan["into"] == str(cli.cwd / "out")


def test_a_failed_run_is_neither_fetched_nor_terminated(cli: Cli) -> None:
    terminated = terminate_records_its_call(cli)
    run_id = cli.new_run_id()
    args = start_args(
        cli, run_id, FAILING_TRAINER, "--then-fetch", "lora_model", "-o", "out", "--then-terminate"
    )
    done = cli(*args)
    assert done.code == 1, done
    assert done.err_lines[-1] == (
        "then: failed: the run failed (exit 3): nothing fetched, plain not terminated"
    )
    assert not (cli.cwd / "out").exists()
    assert not terminated.exists()


def test_a_failing_fetch_never_terminates(cli: Cli) -> None:
    terminated = terminate_records_its_call(cli)
    run_id = cli.new_run_id()
    args = start_args(
        cli, run_id, "print('saved nothing')", "--then-fetch", "lora_model", "--then-terminate"
    )
    done = cli(*args)
    assert done.code == 1, done  # the run completed; what was to follow it did not happen
    last = done.err_lines[-1]
    assert last.startswith("then: failed: fetch failed: lora_model does not exist"), last
    assert last.endswith("; plain not terminated"), last
    assert not terminated.exists()
    # The list says the plan failed, not a plain `completed`.
    (row,) = [line for line in cli("runs").out_lines if line.startswith(run_id)]
    assert "completed (then: failed)" in row, row


def test_a_daemon_killed_before_the_run_ends_fetches_and_terminates_once_back(cli: Cli) -> None:
    terminated = terminate_records_its_call(cli)
    run_id = cli.new_run_id()
    trainer = WAITING_TRAINER + OUTPUTS_TRAINER
    args = start_args(
        cli,
        run_id,
        trainer,
        "--then-fetch",
        "lora_model",
        "-o",
        "out",
        "--then-terminate",
        "--no-follow",
    )
    started = cli(*args)
    assert started.code == 0, started
    cli.wait_far_log(run_id, "step 1")
    [daemon] = cli.daemon.daemon_pids()
    os.kill(daemon, signal.SIGKILL)
    deadline = time.monotonic() + WAIT_S
    while not process_gone(daemon):
        assert time.monotonic() < deadline, "the daemon survived kill -9"
        time.sleep(0.02)
    # The run ends while no daemon is there to see it.
    cli.finish(run_id)
    status_file = cli.far_run_dir(run_id) / ".rtrain" / "status"
    while not status_file.exists():
        assert time.monotonic() < deadline, "the run never ended"
        time.sleep(0.05)
    assert not (cli.cwd / "out").exists()
    # Any command brings a daemon back, which goes on with the plan.
    plan = wait_after(cli, run_id, "done")
    assert plan["fetchedFiles"] == 2
    assert same_tree(cli.far_run_dir(run_id) / "lora_model", cli.cwd / "out" / "lora_model")
    assert terminated.read_text() == "terminated\n"


def test_terminate_waits_for_the_hosts_other_runs(cli: Cli) -> None:
    terminated = terminate_records_its_call(cli)
    other = cli.new_run_id("other")
    cli.start(other, "{python}", "-c", WAITING_TRAINER)
    cli.wait_far_log(other, "step 1")
    run_id = cli.new_run_id()
    started = cli(*start_args(cli, run_id, "print('done')", "--then-terminate", "--no-follow"))
    assert started.code == 0, started
    plan = wait_after(cli, run_id, "waiting")
    deadline = time.monotonic() + WAIT_S
    while "before terminating" not in (plan.get("detail") or ""):
        assert time.monotonic() < deadline, plan
        plan = after(cli, run_id)
    assert plan["detail"] == f"waiting for {other} before terminating"
    assert not terminated.exists()
    cli.finish(other)
    plan = wait_after(cli, run_id, "done")
    assert plan["detail"] == "plain terminated"
    assert terminated.read_text() == "terminated\n"


def test_bad_then_options_are_one_sentence_and_start_nothing(cli: Cli) -> None:
    run_id = cli.new_run_id()
    # No terminate command configured for the host.
    done = cli(*start_args(cli, run_id, "print(1)", "--then-terminate", "--no-follow"))
    assert done.code == 2, done
    assert done.err_lines == [
        'rtrain: --then-terminate needs plain\'s terminate command: set terminate = "..." '
        'under [hosts.plain] in config.toml (for a RunPod pod: terminate = "runpodctl '
        'remove pod $RUNPOD_POD_ID").'
    ], done
    outside = cli(*start_args(cli, run_id, "print(1)", "--then-fetch", "../secrets"))
    assert outside.code == 2 and len(outside.err_lines) == 1, outside
    assert "outside the run directory" in outside.err_lines[0]
    alone = cli(*start_args(cli, run_id, "print(1)", "-o", "out"))
    assert alone.code == 2, alone
    assert alone.err_lines == [
        "rtrain: -o/--out names where --then-fetch fetches to; give --then-fetch PATH too."
    ]
    # A directory the fetch could never write into is refused now, not after the run.
    unwritable = cli(
        *start_args(cli, run_id, "print(1)", "--then-fetch", "model", "-o", "/proc/nope")
    )
    assert unwritable.code == 2, unwritable
    assert unwritable.err_lines == [
        "rtrain: cannot fetch into /proc/nope after the run: /proc: No such file or directory; "
        "nothing was started."
    ], unwritable
    assert not cli.far_run_dir(run_id).exists()


FAILS_ONCE = (
    """
import os, sys
if not os.path.exists("tried"):
    open("tried", "w").close()
    sys.exit(3)
"""
    + OUTPUTS_TRAINER
)


def test_a_restart_gives_what_follows_the_run_a_second_chance(cli: Cli) -> None:
    terminated = terminate_records_its_call(cli)
    run_id = cli.new_run_id()
    args = start_args(
        cli, run_id, FAILS_ONCE, "--then-fetch", "lora_model", "-o", "out", "--then-terminate"
    )
    first = cli(*args)
    assert first.code == 1, first
    assert wait_after(cli, run_id, "failed")["detail"].startswith("the run failed (exit 3)")
    again = cli("restart", "plain", run_id, "--workdir", cli.workdir)
    assert again.code == 0, again
    assert again.err_lines[-1].startswith("then: done: fetched lora_model into "), again
    assert same_tree(cli.far_run_dir(run_id) / "lora_model", cli.cwd / "out" / "lora_model")
    assert terminated.read_text() == "terminated\n"
