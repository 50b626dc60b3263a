"""A run's later life through the CLI: restart (resuming from a checkpoint), rm, exec,
shell and tail -n, against the real sshd, the console gateway and `local`."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time

import pytest

from tests.cli.conftest import WAITING_TRAINER, Cli
from tests.cli.leftovers import kill_marked
from tests.cli.rtrain_command import rtrain_executable
from tests.hosts import GPU_USER
from tests.operations.processes import pid_alive

SLOW_DEMO_CONFIG = """\
steps: 60
log_every: 5
checkpoint_every: 10
context: 3
hidden: 16
backend: python
sleep_per_step: 0.1
"""


def workdir_of(cli: Cli, host: str) -> str:
    return str(cli.local_workdir) if host == "local" else cli.workdir


def far_log(cli: Cli, host: str, run_id: str) -> str:
    root = cli.local_workdir if host == "local" else cli.far_workdir
    return (root / run_id / "train.log").read_text(errors="replace")


def wait_for(predicate: object, what: str) -> None:
    deadline = time.monotonic() + 30
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.mark.parametrize("host", ["plain", "console", "local"])
def test_a_killed_run_restarts_and_resumes_from_its_checkpoint(cli: Cli, host: str) -> None:
    run_id = cli.new_run_id()
    cli.file("cfg.yaml", SLOW_DEMO_CONFIG)
    cli.file("data.jsonl", '{"prompt": "Q: up?\\nA:", "completion": " down"}\n' * 30)
    started = cli(
        "start", host, "-c", "cfg.yaml", "-d", "data.jsonl", "--run-id", run_id,
        "--workdir", workdir_of(cli, host), "--gpus", "0", "--no-follow",
    )  # fmt: skip
    assert started.code == 0, started
    wait_for(lambda: "step 15 |" in far_log(cli, host, run_id), "training never got going")
    kill_marked(run_id)  # SIGKILL to every process of the run: no goodbye, no status
    cli.wait_state(host, run_id, "lost (process gone without exit status)")

    done = cli("restart", host, run_id)
    assert done.code == 0, done
    assert done.out_lines[0] == f"✓ restarted {run_id} on {host} (attempt 2)", done
    resumed = re.search(r"resuming from step (\d+)", done.out)
    assert resumed and int(resumed.group(1)) >= 10, done
    assert done.out_lines[-1].startswith("done: 60 steps, final loss"), done
    # The follow showed the new attempt only, starting at its marker line.
    assert done.out_lines[3].startswith(f"==> rtrain: attempt 2 of {run_id} started at "), done
    log = far_log(cli, host, run_id)
    assert log.count("==> rtrain: attempt 2") == 1 and log.index("step 15 |") < log.index("==>")

    status = cli("status", host, run_id, "--json").json()
    assert status["state"] == "completed"
    attempts = [(a["number"], a["state"]) for a in status["attempts"]]
    assert attempts == [(1, "lost"), (2, "completed")], status
    assert all(a.get("startedAt") and a.get("endedAt") for a in status["attempts"])


def test_restart_refuses_a_running_run_and_asks_for_secrets_again(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.env["RT_TOKEN"] = "s3cret"
    cli.file("cfg.yaml", "x: 1\n")
    started = cli(
        "start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cli.workdir,
        "--gpus", "0", "--no-follow", "--secret", "RT_TOKEN", "--", "{python}", "-c",
        WAITING_TRAINER + "\nprint('token', os.environ['RT_TOKEN'])",
    )  # fmt: skip
    assert started.code == 0, started
    refused = cli("restart", "plain", run_id)
    assert refused.code == 1, refused
    assert refused.err_lines[-1] == (
        f"rtrain: cannot restart {run_id} on plain: it is running; stop it first "
        f"(rtrain stop plain {run_id})."
    ), refused
    cli.finish(run_id)
    cli.wait_state("plain", run_id, "completed")
    (cli.far_run_dir(run_id) / "finish").unlink()

    no_secret = cli("restart", "plain", run_id)
    assert no_secret.code != 0, no_secret
    assert "was started with --secret RT_TOKEN; secrets are never stored" in no_secret.err
    again = cli("restart", "plain", run_id, "--secret", "RT_TOKEN", "--no-follow")
    assert again.code == 0, again
    cli.finish(run_id)
    cli.wait_state("plain", run_id, "completed")
    assert far_log(cli, "plain", run_id).count("token s3cret") == 2


@pytest.mark.parametrize("host", ["plain", "console", "local"])
def test_rm_removes_an_ended_run_and_refuses_a_running_one(cli: Cli, host: str) -> None:
    ended, running = cli.new_run_id("ended"), cli.new_run_id("running")
    workdir = workdir_of(cli, host)
    cli.file("cfg.yaml", "x: 1\n")
    for run_id, code in ((ended, "print('bye')"), (running, WAITING_TRAINER)):
        done = cli(
            "start", host, "-c", "cfg.yaml", "--run-id", run_id, "--workdir", workdir,
            "--gpus", "0", "--no-follow", "--", "{python}", "-c", code,
        )  # fmt: skip
        assert done.code == 0, done
    cli.wait_state(host, ended, "completed")
    root = cli.local_workdir if host == "local" else cli.far_workdir

    refused = cli("rm", host, ended, running)
    assert refused.code == 1, refused
    assert f"cannot remove {running} on {host}: it is running" in refused.err, refused
    assert "nothing was removed" in refused.err
    assert (root / ended).is_dir()

    done = cli("rm", host, ended)
    assert done.code == 0, done
    assert done.out == f"removed {ended} on {host} ({root / ended})\n", done
    assert not (root / ended).exists()
    assert cli("status", host, ended, "--workdir", workdir).code == 1
    assert ended not in cli("runs").out
    assert (root / running).is_dir()


@pytest.mark.parametrize("host", ["plain", "local"])
def test_rm_names_what_still_runs_in_the_run_dir_and_force_stops_it(cli: Cli, host: str) -> None:
    run_id = cli.new_run_id("dwelt")
    cli.file("cfg.yaml", "x: 1\n")
    cli.start(run_id, "{python}", "-c", "print('bye')", host=host)
    cli.wait_state(host, run_id, "completed")
    # What a TensorBoard started beside the run looks like: detached, in the run dir.
    spawn = "nohup sleep 300 >/dev/null 2>&1 & echo $! > board.pid"
    assert cli("exec", host, run_id, "--", "sh", "-c", spawn).code == 0
    root = cli.local_workdir if host == "local" else cli.far_workdir
    pid = int((root / run_id / "board.pid").read_text())
    assert pid_alive(pid)

    refused = cli("rm", host, run_id)
    assert refused.code == 1, refused
    assert (
        f"cannot remove {run_id} on {host}: pid {pid} (sleep 300) still runs in its run "
        "directory" in refused.err
    ), refused
    assert f"rtrain rm --force {host} {run_id}" in refused.err, refused
    assert (root / run_id).is_dir() and pid_alive(pid)

    done = cli("rm", host, run_id, "--force")
    assert done.code == 0, done
    assert not (root / run_id).exists()
    assert not pid_alive(pid)


def test_a_start_interrupted_before_its_launch_is_removable(cli: Cli) -> None:
    run_id = cli.new_run_id("never")
    # What a start cut off between claiming its run id and launching leaves on the host.
    home = cli.hosts.home(GPU_USER)
    leftover = cli.far_run_dir(run_id)
    leftover.mkdir(parents=True)
    (leftover / ".rtrain-run").write_text(f"{run_id}\n")  # prepare's mark
    (leftover / "config.yaml").write_text("x: 1\n")
    for path in (
        leftover.parent.parent, leftover.parent, leftover, leftover / ".rtrain-run",
        leftover / "config.yaml",
    ):  # fmt: skip
        os.chown(path, home.stat().st_uid, home.stat().st_gid)
    status = cli("status", "plain", run_id, "--workdir", cli.workdir)
    assert status.out == "lost (never launched)\n", status
    restart = cli("restart", "plain", run_id, "--workdir", cli.workdir)
    assert restart.code == 1 and "it was never launched" in restart.err, restart
    done = cli("rm", "plain", run_id, "--workdir", cli.workdir)
    assert done.code == 0, done
    assert not leftover.exists()


@pytest.mark.parametrize("host", ["plain", "console", "local"])
def test_exec_runs_in_the_run_dir_and_exits_with_its_code(cli: Cli, host: str) -> None:
    run_id = cli.new_run_id()
    cli.file("cfg.yaml", "x: 1\n")
    cli.start(run_id, "{python}", "-c", "open('made.txt', 'w').write('made')", host=host)
    cli.wait_state(host, run_id, "completed")
    done = cli("exec", host, run_id, "--", "sh", "-c", "cat made.txt; echo; echo oops >&2; exit 7")
    assert (done.code, done.out) == (7, "made\n"), done
    assert "oops" in done.err
    assert cli("exec", host, run_id, "--", "true").code == 0
    missing = cli("exec", host, run_id, "--", "no-such-tool")
    assert missing.code != 0 and "no-such-tool is not a program on" in missing.err, missing


def test_tail_n_starts_that_many_lines_from_the_end(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.file("cfg.yaml", "x: 1\n")
    cli.start(run_id, "{python}", "-c", "for i in range(1000): print('line', i)")
    cli.wait_state("plain", run_id, "completed")
    done = cli("tail", "plain", run_id, "-n", "3")
    assert (done.code, done.out) == (0, "line 997\nline 998\nline 999\n"), done
    everything = cli("tail", "plain", run_id, "-n", "5000", "--no-follow")
    assert everything.out_lines == [f"line {i}" for i in range(1000)]
    assert cli("tail", "plain", run_id, "-n", "0").out == ""


@pytest.mark.parametrize("host", ["plain", "console", "local"])
def test_shell_opens_a_terminal_in_the_run_directory(cli: Cli, host: str) -> None:
    run_id = cli.new_run_id()
    cli.file("cfg.yaml", "x: 1\n")
    cli.start(run_id, "{python}", "-c", "print('hi')", host=host)
    pid, fd = pty.fork()
    if pid == 0:  # the child: rtrain shell on a terminal of its own
        os.chdir(cli.cwd)
        os.execve(rtrain_executable(), ["rtrain", "shell", host, run_id], cli.env)
    seen = b""
    sent = False
    deadline = time.monotonic() + 30
    try:
        while b"SHOWN:" not in seen or b"config.yaml" not in seen.split(b"SHOWN:", 1)[-1]:
            assert time.monotonic() < deadline, seen
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    seen += os.read(fd, 4096)
                except OSError:
                    break
            if not sent and seen:
                time.sleep(0.5)  # let the far shell (and a console's cd) settle
                os.write(fd, b"echo SHOWN:$(ls); exit\n")
                sent = True
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        os.close(fd)
    shown = seen.split(b"SHOWN:", 1)[-1]
    assert b"config.yaml" in shown and b"train.log" in shown, seen


def test_shell_without_a_terminal_says_to_use_exec(cli: Cli) -> None:
    done = subprocess.run(
        [rtrain_executable(), "shell", "plain", "some-run"],
        env=cli.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done
    assert "rtrain shell needs a terminal" in done.stderr and "rtrain exec" in done.stderr
