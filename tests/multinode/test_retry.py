"""`start --retry N`: a run whose processes vanish (kill -9 of its whole session) ends lost
and the daemon starts its next attempt in the same run dir, where the trainer resumes from its
checkpoint; a run a person stopped and one that failed with its own exit code are not
retried."""

from __future__ import annotations

import json
import time

from tests.cli.conftest import FAILING_TRAINER, WAIT_S, Cli
from tests.operations.processes import kill_run, run_pids

# Counts steps on from its checkpoint (the step, in its run dir), one every 0.1 s.
RESUMING_TRAINER = """
import os, time
step = int(open("checkpoint").read()) if os.path.exists("checkpoint") else 0
if step:
    print(f"resuming from step {step}", flush=True)
while True:
    step += 1
    print(f"step {step} | loss 1.0", flush=True)
    with open("checkpoint.tmp", "w") as f:
        f.write(str(step))
    os.replace("checkpoint.tmp", "checkpoint")
    time.sleep(0.1)
"""


def run_json(cli: Cli, run_id: str) -> dict[str, object]:
    done = cli("status", "plain", run_id, "--json")
    assert done.code == 0, done
    found: dict[str, object] = json.loads(done.out)
    return found


def wait_attempts(cli: Cli, run_id: str, count: int, state: str) -> dict[str, object]:
    deadline = time.monotonic() + WAIT_S * 2
    while True:
        run = run_json(cli, run_id)
        attempts = run.get("attempts") or []
        assert isinstance(attempts, list)
        if len(attempts) == count and run["state"] == state:
            return run
        if time.monotonic() > deadline:
            said = cli.daemon.log.read_text(errors="replace")[-3000:]
            raise AssertionError(f"{run_id}: never attempt {count} {state}: {run}\n{said}")
        time.sleep(0.2)


def attempts_of(cli: Cli, run_id: str) -> list[dict[str, object]]:
    attempts = run_json(cli, run_id).get("attempts") or []
    assert isinstance(attempts, list)
    return attempts


def test_a_lost_run_comes_back_and_resumes_but_stopped_and_failed_runs_do_not(cli: Cli) -> None:
    cli.file("resume.py", RESUMING_TRAINER)
    cli.file("fail.py", FAILING_TRAINER)
    code = str(cli.cwd)

    stopped = cli.new_run_id("stopped")
    cli.start(stopped, "{python}", "resume.py", code=code, retry="1")
    cli.wait_far_log(stopped, "step 2 |")
    assert cli("stop", "plain", stopped).code == 0
    failed = cli.new_run_id("exit3")
    cli.start(failed, "{python}", "fail.py", code=code, retry="1")
    cli.wait_state("plain", failed, "failed (exit 3)")

    lost = cli.new_run_id("lost")
    cli.start(lost, "{python}", "resume.py", code=code, retry="1")
    cli.wait_far_log(lost, "step 5 |")
    kill_run(lost)  # kill -9 of the whole session: no status is ever written
    run = wait_attempts(cli, lost, 2, "running")
    attempts = run["attempts"]
    assert isinstance(attempts, list), run
    first, second = attempts
    assert first["state"] == "lost", first
    assert second["cause"].startswith("retry 1 of 1: attempt 1 ended lost"), second
    cli.wait_far_log(lost, "resuming from step")
    log = (cli.far_run_dir(lost) / "train.log").read_text()
    resumed = int(log.split("resuming from step ")[1].split()[0])
    assert resumed >= 5, log

    # The lost run's retry came after the same back-off as theirs would have: none came.
    assert len(attempts_of(cli, stopped)) == 1
    assert len(attempts_of(cli, failed)) == 1
    assert cli("status", "plain", stopped).out == "stopped\n"

    # Its one retry spent, a second loss stays lost.
    kill_run(lost)
    cli.wait_state("plain", lost, "lost (process gone without exit status)")
    assert run_pids(lost) == []
    assert len(attempts_of(cli, lost)) == 2


def test_a_stop_during_the_back_off_ends_the_retries_and_says_so(cli: Cli) -> None:
    cli.file("resume.py", RESUMING_TRAINER)
    code = str(cli.cwd)
    stopped, other = cli.new_run_id("backoff"), cli.new_run_id("witness")
    for run_id in (stopped, other):
        cli.start(run_id, "{python}", "resume.py", code=code, retry="2")
        cli.wait_far_log(run_id, "step 2 |")
    # Both lost in the same look of the host: their retries fall due together.
    kill_run(stopped)
    kill_run(other)
    cli.wait_state("plain", stopped, "lost (process gone without exit status)")
    done = cli("stop", "plain", stopped)
    assert done.code == 0, done
    assert done.out == (
        f"{stopped} was not running on plain\n"
        f"its 2 retries left are cancelled: the daemon will not start {stopped} again\n"
    ), done
    # The witness's retry comes after the back-off both shared; the stopped run's never.
    wait_attempts(cli, other, 2, "running")
    assert len(attempts_of(cli, stopped)) == 1
    assert run_pids(stopped) == []
    run = run_json(cli, stopped)
    assert run["state"] == "lost", run
    # Said once: a second stop has nothing left to cancel.
    again = cli("stop", "plain", stopped)
    assert again.out == f"{stopped} was not running on plain\n", again
    assert cli("stop", "plain", other).code == 0
