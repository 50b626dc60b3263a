"""`rtrain wait`: blocks until a run ends and exits by how it ended (0 completed, 1 failed,
3 stopped, 5 timeout, ...; docs/cli.md), and config.toml's `notify` command runs on this
machine when a run ends, with the run in its environment only."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from rtrain.client.daemon_client import DaemonClient
from tests.cli.conftest import WAIT_S, WAITING_TRAINER, Cli
from tests.cli.rtrain_command import RunningCommand

# Fails with a last line a shell would act on, were it ever read as shell.
TRICKY_FAILURE = """
print("step 1 | loss 1.0", flush=True)
raise RuntimeError("bad $(touch pwned) `touch pwned2`; rm -rf nothing")
"""


def waiting(cli: Cli, *args: str) -> tuple[str, RunningCommand]:
    """A run that lasts until the test lets it end, and a `rtrain wait` on it, waiting."""
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", WAITING_TRAINER)
    cli.wait_far_log(run_id, "step 1")
    return run_id, cli.spawn("wait", "plain", run_id, *args)


def test_wait_exits_0_when_the_run_completes(cli: Cli) -> None:
    run_id, wait = waiting(cli)
    cli.finish(run_id)
    done = wait.finish()
    assert done.code == 0, done
    assert done.out_lines == ["completed"], done


def test_wait_exits_1_when_the_run_fails(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", "import sys; print('x', flush=True); sys.exit(3)")
    done = cli("wait", "plain", run_id)
    assert done.code == 1, done
    assert done.out_lines[0].startswith("failed (exit 3"), done


def test_wait_exits_3_when_the_run_is_stopped(cli: Cli) -> None:
    run_id, wait = waiting(cli, "--json")
    assert cli("stop", "plain", run_id).code == 0
    done = wait.finish()
    assert done.code == 3, done
    answer = done.json()
    assert (answer["outcome"], answer["exitCode"]) == ("ended", 3), answer
    assert answer["run"]["state"] == "stopped"


def test_until_running_and_timeout(cli: Cli) -> None:
    run_id, _ = waiting(cli)
    reached = cli("wait", "plain", run_id, "--until", "running")
    assert reached.code == 0, reached
    assert reached.out_lines == ["running"]
    timed_out = cli("wait", "plain", run_id, "--timeout", "1s")
    assert timed_out.code == 5, timed_out
    assert timed_out.out_lines == ["running"]
    assert timed_out.err_lines == [f"gave up waiting; {run_id} on plain goes on."]
    cli.finish(run_id)


def test_ctrl_c_exits_130_and_leaves_the_run_alone(cli: Cli) -> None:
    run_id, wait = waiting(cli)
    process = wait.process
    # Once the daemon counts it as a client, the command is past its imports and waiting.
    with DaemonClient.connect(name="rtrain-tests") as client:
        deadline = time.monotonic() + WAIT_S
        while client.request("daemon/info").clients < 2:
            assert time.monotonic() < deadline, "the wait never reached the daemon"
            time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    done = wait.finish()
    assert done.code == 130, done
    assert cli("status", "plain", run_id).out_lines == ["running"]
    cli.finish(run_id)


def test_bad_input_and_an_unknown_run(cli: Cli) -> None:
    until = cli("wait", "plain", "r1", "--until", "done")
    assert until.code == 2, until
    assert until.err_lines[0].startswith("rtrain: --until takes one of queued, running,")
    assert cli("wait", "plain", "r1", "--timeout", "soon").code == 2
    missing = cli("wait", "plain", "never-was", "--workdir", cli.workdir)
    assert missing.code == 7, missing
    (sentence,) = missing.err_lines
    assert sentence.startswith("rtrain: "), missing


def logged(cli: Cli, text: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while text not in cli.daemon.log.read_text():
        assert time.monotonic() < deadline, f"the daemon never logged {text!r}"
        time.sleep(0.05)


def test_notify_runs_once_with_the_run_in_its_environment_only(cli: Cli) -> None:
    out = cli.cwd / "notified"
    out.mkdir()
    config = cli.daemon.config / "rtrain"
    config.mkdir()
    (config / "config.toml").write_text(
        f'notify = "env > {out}/global-$RTRAIN_RUN_ID"\n'
        "[hosts.plain]\n"
        f"notify = 'cd {out} && env >> \"$RTRAIN_STATE-$RTRAIN_RUN_ID\"'\n"
    )
    # A credential in the environment the daemon starts with is not passed on.
    cli.env["HF_TOKEN"] = "hf_notforhooks"
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", TRICKY_FAILURE, secret="HF_TOKEN")
    assert cli("wait", "plain", run_id).code == 1
    ran = f"notify for plain/{run_id} (failed) ran"
    logged(cli, ran)  # the command has ended: its file is whole
    written = (out / f"failed-{run_id}").read_text()
    env = dict(line.split("=", 1) for line in written.splitlines() if "=" in line)
    assert env["RTRAIN_HOST"] == "plain"
    assert env["RTRAIN_RUN_ID"] == run_id
    assert env["RTRAIN_STATE"] == "failed"
    assert env["RTRAIN_EXIT_CODE"] == "1"
    assert env["RTRAIN_REASON"] == "RuntimeError: bad $(touch pwned) `touch pwned2`; rm -rf nothing"
    assert "HF_TOKEN" not in env
    assert "hf_notforhooks" not in written
    # The host's own notify won over the global one, and no shell read the reason.
    assert sorted(p.name for p in out.iterdir()) == [f"failed-{run_id}"]
    assert not list(cli.cwd.glob("pwned*")) and not list(Path.home().glob("pwned*"))
    # Told once: asking again about the ended run tells nobody.
    assert cli("status", "plain", run_id).code == 0
    assert cli("wait", "plain", run_id).code == 1
    assert (out / f"failed-{run_id}").read_text().count("RTRAIN_STATE=failed") == 1
    assert cli.daemon.log.read_text().count(ran) == 1
