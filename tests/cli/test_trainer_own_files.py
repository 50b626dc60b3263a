"""A trainer's own files never decide its run's state: rtrain keeps the files it reads a
run's state from (`status`, `train.pid`) in the run's private `.rtrain/`, while the trainer
works in the run directory itself. A run directory of an older rtrain (those files beside
the trainer's, no `.rtrain/`) still reads as it did, and restarts."""

from __future__ import annotations

from tests.cli.conftest import Cli

# Writes files named as rtrain's own once were, with words that would read as success and
# as another process; then waits to be told to end, and fails.
NAMING_TRAINER = r"""
import os, sys, time
for name, text in (("status", "0\n"), ("train.pid", "1\n"), ("status.tmp", "0\n")):
    with open(name, "w") as f:
        f.write(text)
print("step 1 | loss 1.0", flush=True)
while not os.path.exists("finish"):
    time.sleep(0.05)
print("giving up", file=sys.stderr, flush=True)
sys.exit(3)
"""


def test_a_trainer_writing_a_status_file_does_not_change_its_state(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", NAMING_TRAINER)
    cli.wait_far_log(run_id, "step 1")
    run_dir = cli.far_run_dir(run_id)
    assert (run_dir / "status").read_text() == "0\n"
    status = cli("status", "plain", run_id, "--json").json()
    assert status["state"] == "running", status
    assert cli("runs", "--json").json()[0]["state"] == "running"
    cli.finish(run_id)
    cli.wait_state("plain", run_id, "failed (exit 3)")
    # The trainer's files are its own: rtrain neither read nor removed them.
    assert (run_dir / "status").read_text() == "0\n"
    assert (run_dir / "train.pid").read_text() == "1\n"
    # A restart of the run clears rtrain's record of the last attempt, not the trainer's.
    restarted = cli("restart", "plain", run_id, "--no-follow", "--", "{python}", "-c", "pass")
    assert restarted.code == 0, restarted
    cli.wait_state("plain", run_id, "completed")
    assert (run_dir / "status").read_text() == "0\n"


FAILING = "import sys; print('ValueError: bad shape', file=sys.stderr); sys.exit(3)"


def test_a_run_dir_of_an_older_rtrain_still_reads_and_restarts(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", FAILING)
    cli.wait_state("plain", run_id, "failed (exit 3, ValueError: bad shape)")
    # As an older rtrain left it: its own files beside the trainer's, no .rtrain/.
    run_dir = cli.far_run_dir(run_id)
    own = run_dir / ".rtrain"
    for name in ("status", "train.pid"):
        (own / name).rename(run_dir / name)
    own.rmdir()
    # A daemon that has never seen the run asks the host.
    assert cli("daemon", "stop").code == 0
    (cli.daemon.state / "rtrain" / "registry.sqlite3").unlink()
    shown = cli("status", "plain", run_id, "--workdir", cli.workdir)
    assert shown.out == "failed (exit 3, ValueError: bad shape)\n", shown

    restarted = cli("restart", "plain", run_id, "--no-follow", "--", "{python}", "-c", "pass")
    assert restarted.code == 0, restarted
    cli.wait_state("plain", run_id, "completed")
    # Attempt 2 is of this rtrain: its state files are in .rtrain/, the old ones gone.
    assert (own / "status").read_text() == "0\n"
    assert not (run_dir / "status").exists()
