"""A trainer's own files never decide its run's state: rtrain keeps every file it reads a
run's state or reason from (`status`, `train.pid`, `meta.json`'s record, `stop_requested`,
`setup_failed`, `program_missing`, `env_failed`, `oom_killed`, `stalled`, `limit_stop`,
`limits.pid`, `rank_failure`, `queued`, `attempt-N`, `train.jobid`) in the run's private
`.rtrain/`, while the trainer works in the run directory itself. Run directories of older
rtrains (those files beside the trainer's: all of them, or all but `status` and
`train.pid`) still read as they did, and restart."""

from __future__ import annotations

import json

from tests.cli.conftest import Cli

# Every name rtrain keeps a run's bookkeeping under, as the trainer's own files, each with
# words that would read as something else: success, a stop, a setup or environment that
# failed, an OOM kill, a stall, a limit, another rank's failure, a wait for GPUs, a second
# attempt, a Slurm job, another record of the launch.
OWN_NAMES = {
    "status": "0\n",
    "status.tmp": "0\n",
    "train.pid": "1\n",
    "meta.json": "{}\n",
    "stop_requested": "1\n",
    "setup_failed": "",
    "program_missing": "",
    "env_failed": "broken\n",
    "oom_killed": "",
    "stalled": "1\n",
    "limit_stop": "max_duration 5\n",
    "limits.pid": "1\n",
    "rank_failure": "0\t1\t-\t1\t-\tRuntimeError: not mine\t1.0\n",
    "queued": "waiting for GPUs\n",
    "attempt-2": "",
    "train.jobid": "7\n",
}
# Writes them; then waits to be told to end, and fails of its own exception.
NAMING_TRAINER = f"""
import os, sys, time
for name, text in {OWN_NAMES!r}.items():
    with open(name, "w") as f:
        f.write(text)
print("step 1 | loss 1.0", flush=True)
while not os.path.exists("finish"):
    time.sleep(0.05)
print("ValueError: out of patience", file=sys.stderr, flush=True)
sys.exit(3)
"""


def test_a_trainer_writing_files_named_as_rtrains_does_not_change_what_rtrain_says(
    cli: Cli,
) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", NAMING_TRAINER)
    cli.wait_far_log(run_id, "step 1")
    run_dir = cli.far_run_dir(run_id)
    assert (run_dir / "status").read_text() == "0\n"
    status = cli("status", "plain", run_id, "--json").json()
    # Running: not completed (status), queued (queued), nor stalled (stalled).
    assert status["state"] == "running", status
    assert not status.get("stalledFor") and not status.get("reason"), status
    assert cli("runs", "--json").json()[0]["state"] == "running"
    cli.finish(run_id)
    # Failed of its own exception: not stopped (stop_requested, limit_stop), not its setup,
    # program or environment, not an OOM kill, not another rank's failure.
    cli.wait_state("plain", run_id, "failed (exit 3, ValueError: out of patience)")
    # The trainer's files are its own: rtrain neither read nor removed them.
    for name, text in OWN_NAMES.items():
        assert (run_dir / name).read_text() == text, name
    # A restart reads rtrain's record of the launch (not the trainer's meta.json) and claims
    # attempt 2 in .rtrain/ (not refused by the trainer's attempt-2); it clears rtrain's
    # record of the last attempt, not the trainer's files.
    restarted = cli("restart", "plain", run_id, "--no-follow", "--", "{python}", "-c", "pass")
    assert restarted.code == 0, restarted
    cli.wait_state("plain", run_id, "completed")
    for name, text in OWN_NAMES.items():
        assert (run_dir / name).read_text() == text, name
    record = json.loads((run_dir / ".rtrain" / "meta.json").read_text())
    assert (record["run_id"], record["attempt"]) == (run_id, 2), record


FAILING = "import sys; print('ValueError: bad shape', file=sys.stderr); sys.exit(3)"


def test_a_run_dir_of_an_older_rtrain_still_reads_and_restarts(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", FAILING)
    cli.wait_state("plain", run_id, "failed (exit 3, ValueError: bad shape)")
    # As an older rtrain left it: its own files beside the trainer's, no .rtrain/.
    run_dir = cli.far_run_dir(run_id)
    own = run_dir / ".rtrain"
    (own / "meta.json").unlink()  # the copy beside the trainer's files was its only one
    for path in own.iterdir():
        path.rename(run_dir / path.name)
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


SLEEPER = "import time; print('step 1 | loss 1.0', flush=True); time.sleep(300)"


def test_a_run_dir_of_the_first_layout_with_rtrain_dir_still_reads_stopped(cli: Cli) -> None:
    """The layout of the rtrain before this one: `status` and `train.pid` in `.rtrain/`,
    every other file of rtrain's (`stop_requested` here) beside the trainer's, and no
    `.rtrain/meta.json`. Its stop is read where that rtrain wrote it."""
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", SLEEPER)
    cli.wait_far_log(run_id, "step 1")
    assert cli("stop", "plain", run_id).code == 0
    run_dir = cli.far_run_dir(run_id)
    own = run_dir / ".rtrain"
    (own / "stop_requested").rename(run_dir / "stop_requested")
    (own / "meta.json").unlink()
    assert cli("daemon", "stop").code == 0
    (cli.daemon.state / "rtrain" / "registry.sqlite3").unlink()
    shown = cli("status", "plain", run_id, "--workdir", cli.workdir)
    assert shown.out.startswith("stopped"), shown
