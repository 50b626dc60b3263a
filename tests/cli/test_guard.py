"""rtrain guard and rtrain terminate, end to end: the CLI, the daemon and the guard on the real
test sshd, with idle periods of seconds. The terminate command appends to a file in the test's
far workdir, so every call is counted.

Other tests on this machine open terminals, so the tests that are not about ssh sessions arm
with --ignore-sessions. Nothing here waits a fixed time: each test waits for the guard's own
looks (`checkedAt`) to pass a moment, or for the file of calls.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import PROXIED_ALIAS, WAITING_TRAINER, Cli
from tests.cli.rtrain_command import rtrain_executable
from tests.cli.tmux_terminal import Tmux
from tests.hosts import GPU_USER, TcpProxy

WAIT_S = 30.0


def wait_until(check: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


class Guarded:
    """The test's guard on `plain`, in its own far workdir; `calls` counts its command."""

    def __init__(self, cli: Cli) -> None:
        self.cli = cli
        self.calls = cli.far_workdir / "calls"

    @property
    def command(self) -> str:
        return f"echo fired >> {shlex.quote(str(self.calls))}; echo done"

    def guard(self, *args: str) -> Any:
        done = self.cli("guard", "plain", "--workdir", self.cli.workdir, *args)
        assert done.code == 0, done
        return done

    def arm(self, idle: str = "2s", *, command: str | None = None, sessions: bool = False) -> Any:
        extra = [] if sessions else ["--ignore-sessions"]
        return self.guard("--idle", idle, "--then", command or self.command, *extra)

    def state(self) -> Any:
        return json.loads(self.guard("--json").out)["guard"]

    def looked_after(self, moment: float) -> bool:
        checked = self.state().get("checkedAt")
        return checked is not None and checked > moment

    def call_count(self) -> int:
        return self.calls.read_text().count("fired\n") if self.calls.exists() else 0


@pytest.fixture
def guarded(cli: Cli) -> Iterator[Guarded]:
    guarded = Guarded(cli)
    try:
        yield guarded
    finally:
        cli("guard", "plain", "--off", "--workdir", cli.workdir)


def test_the_guard_fires_after_the_idle_period_and_says_so(cli: Cli, guarded: Guarded) -> None:
    armed = guarded.arm()
    assert armed.out.startswith("guard on plain: armed: after 2s idle it runs `echo fired")
    wait_until(lambda: guarded.call_count() == 1, "the terminate command's call")
    shown = guarded.guard().out
    assert "it ran the command for this idle period already" in shown
    assert "last fired " in shown and "(exit 0)" in shown
    state = guarded.state()
    assert state["armed"] is True and state["idleSeconds"] == 2
    assert state["lastFired"]["exitCode"] == 0 and "actsAt" not in state
    # Once a period: more looks at the same idle period run nothing again.
    fired_at = time.time()
    wait_until(lambda: guarded.looked_after(fired_at + 3), "three more looks")
    assert guarded.call_count() == 1
    log = (cli.far_workdir / ".guard" / "log").read_text()
    assert "fired: the host was idle since" in log and "done\n" in log
    hosts = cli("hosts")
    assert hosts.code == 0, hosts
    [line] = [line for line in hosts.out_lines if line.startswith("plain ")]
    assert "armed" in line
    listed = {h["alias"]: h for h in cli("hosts", "--json").json()}
    assert listed["plain"]["guard"]["armed"] is True


def test_the_guard_waits_while_a_run_runs(cli: Cli, guarded: Guarded) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", WAITING_TRAINER)
    cli.wait_far_log(run_id, "step 1")
    armed_at = time.time()
    guarded.arm()
    wait_until(lambda: guarded.looked_after(armed_at + 4), "looks past the idle period")
    state = guarded.state()
    assert state["busy"] == f"run {run_id} is running" and "actsAt" not in state
    assert f"busy: run {run_id} is running" in guarded.guard().out
    assert guarded.call_count() == 0
    cli.finish(run_id)
    wait_until(lambda: guarded.call_count() == 1, "the call once the run ended")


# 48 MiB of zeros: over a link with a 50 ms delay it takes seconds to fetch.
BIG_TRAINER = """
with open("big.bin", "wb") as f:
    f.truncate(48 * 1024 * 1024)
print("wrote big.bin", flush=True)
"""


def test_the_guard_waits_while_a_transfer_is_in_flight(
    cli: Cli, guarded: Guarded, link: TcpProxy
) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", BIG_TRAINER)
    cli.wait_state("plain", run_id, "completed")
    leases = cli.far_workdir / ".leases"
    link.delay_s = 0.05
    fetching = cli.spawn(
        "fetch", PROXIED_ALIAS, run_id, "big.bin", "-o", "out", "--workdir", cli.workdir
    )
    wait_until(lambda: leases.is_dir() and any(leases.iterdir()), "the transfer's lease")
    # Nothing moves any more: the fetch is in flight for as long as the test wants.
    link.stall()
    armed_at = time.time()
    guarded.arm()
    wait_until(lambda: guarded.looked_after(armed_at + 4), "looks past the idle period")
    assert guarded.state()["busy"] == "a transfer is in flight"
    assert guarded.call_count() == 0
    link.resume()
    done = fetching.finish(timeout=120)
    assert done.code == 0, done
    assert (cli.cwd / "out" / "big.bin").stat().st_size == 48 * 1024 * 1024
    # The lease is dropped once the fetch is done, and the guard's idle period starts then.
    wait_until(lambda: not any(leases.iterdir()), "the lease dropped")
    wait_until(lambda: guarded.call_count() == 1, "the call once the fetch ended")


def test_the_guard_waits_while_an_interactive_session_is_open(cli: Cli, guarded: Guarded) -> None:
    session = subprocess.Popen(
        cli.hosts.ssh_argv("plain", options=["-tt", "-o", "BatchMode=yes"]),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert session.stdin is not None
        marker = cli.far_workdir / "logged-in"
        cli.far_workdir.mkdir(parents=True, exist_ok=True)
        subprocess.run(["chown", GPU_USER, str(cli.far_workdir)], check=True)
        session.stdin.write(f"touch {shlex.quote(str(marker))}\n".encode())
        session.stdin.flush()
        wait_until(marker.exists, "the interactive shell")
        armed_at = time.time()
        guarded.arm(sessions=True)
        wait_until(lambda: guarded.looked_after(armed_at + 4), "looks past the idle period")
        assert guarded.state()["busy"] == "an interactive ssh session is open"
        assert guarded.call_count() == 0
    finally:
        session.communicate(b"exit\n", timeout=WAIT_S)
    # Other tests' terminals on this machine may delay it, never stop it for long.
    wait_until(lambda: guarded.call_count() == 1, "the call once the session closed", 90)


def test_the_guard_fires_with_the_daemon_and_its_ssh_master_gone(
    cli: Cli, guarded: Guarded
) -> None:
    guarded.arm("3s")
    stopped = cli("daemon", "stop")
    assert stopped.code == 0, stopped
    assert cli("daemon", "status").code == 1
    masters = subprocess.run(
        ["pgrep", "-f", f"ControlPath={cli.daemon.runtime}/"], capture_output=True, text=True
    )
    assert masters.stdout == ""
    wait_until(lambda: guarded.call_count() == 1, "the call with no daemon")


def test_arming_again_replaces_the_guard_and_it_fires_once(cli: Cli, guarded: Guarded) -> None:
    first = f"echo first >> {shlex.quote(str(guarded.calls))}"
    armed = guarded.arm("10m", command=first)
    assert "(open ssh sessions ignored)" in armed.out
    assert guarded.state()["idleSeconds"] == 600
    stalled = guarded.guard("--stalled-idle", "--idle", "10m", "--then", first)
    assert "(ssh sessions count, stalled runs idle)" in stalled.out
    assert guarded.state()["stalledIdle"] is True
    guarded.arm()
    wait_until(lambda: guarded.call_count() == 1, "the call")
    fired_at = time.time()
    wait_until(lambda: guarded.looked_after(fired_at + 3), "three more looks")
    assert guarded.calls.read_text() == "fired\n"


def test_disarming_ends_the_guard(cli: Cli, guarded: Guarded) -> None:
    guarded.arm("3s")
    pid = int((cli.far_workdir / ".guard" / "pid").read_text())
    off = guarded.guard("--off")
    assert off.out.startswith("guard on plain: disarmed")
    # The process that could have fired is gone, so nothing can run the command any more.
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
    assert guarded.state()["armed"] is False
    assert guarded.call_count() == 0


def test_the_configured_guard_is_armed_on_the_host_s_first_use(cli: Cli, guarded: Guarded) -> None:
    config = cli.daemon.config / "rtrain" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f'[hosts.plain]\nworkdir = {json.dumps(cli.workdir)}\nidle_stop = "2s"\n'
        f"terminate = {json.dumps(guarded.command)}\n"
    )
    shown = cli("guard", "plain")
    assert shown.code == 0, shown
    assert shown.out.startswith("guard on plain: armed: after 2s idle it runs `echo fired")
    wait_until(lambda: guarded.call_count() == 1, "the configured guard's call")
    pid = (cli.far_workdir / ".guard" / "pid").read_text()
    # The next daemon finds the guard armed as configured and leaves it be: the same process,
    # the same idle period, no second call.
    assert cli("daemon", "stop").code == 0
    again = cli("guard", "plain")
    assert "it ran the command for this idle period already" in again.out, again
    assert (cli.far_workdir / ".guard" / "pid").read_text() == pid
    looked_at = time.time()
    wait_until(lambda: guarded.looked_after(looked_at + 2), "two more looks")
    assert guarded.call_count() == 1


def test_the_configured_guard_is_armed_as_a_run_is_launched_not_by_other_commands(
    cli: Cli, guarded: Guarded
) -> None:
    config = cli.daemon.config / "rtrain" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f'[hosts.plain]\nworkdir = {json.dumps(cli.workdir)}\nidle_stop = "10m"\n'
        f"terminate = {json.dumps(guarded.command)}\n"
    )
    pid_file = cli.far_workdir / ".guard" / "pid"
    # Reaching the host for anything but a launch leaves its guard alone.
    asked = cli("status", "plain", "no-such-run", "--workdir", cli.workdir)
    assert "no-such-run" in asked.err, asked
    assert not pid_file.exists()
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", WAITING_TRAINER)
    wait_until(pid_file.exists, "the guard armed by the launch")
    assert guarded.state()["armed"] is True
    assert guarded.state()["idleSeconds"] == 600
    cli.finish(run_id)
    cli.wait_state("plain", run_id, "completed")


def test_terminate_refuses_while_a_run_runs_and_runs_with_yes_or_force(
    cli: Cli, guarded: Guarded
) -> None:
    guarded.arm("10m")
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", WAITING_TRAINER)
    cli.wait_far_log(run_id, "step 1")
    refused = cli("terminate", "plain", "--yes", "--workdir", cli.workdir)
    assert refused.code == 1, refused
    assert refused.err == (
        f"rtrain: plain is busy (run {run_id} is running), so it was not terminated; "
        "--force terminates it anyway.\n"
    )
    assert guarded.call_count() == 0
    forced = cli("terminate", "plain", "--yes", "--force", "--workdir", cli.workdir, "--json")
    assert forced.code == 0, forced
    result = forced.json()
    assert result["source"] == "guard" and result["outcome"] == "ended"
    assert result["output"] == ["done"] and result["exitCode"] == 0
    assert guarded.call_count() == 1
    cli.finish(run_id)
    cli.wait_state("plain", run_id, "completed")
    done = cli("terminate", "plain", "--yes", "--workdir", cli.workdir)
    assert done.code == 0, done
    assert done.out == "done\n"
    assert done.err.startswith("plain: `echo fired")
    assert guarded.call_count() == 2
    log = (cli.far_workdir / ".guard" / "log").read_text()
    assert "rtrain terminate --force: echo fired" in log and "rtrain terminate: echo" in log


def test_terminate_says_what_to_set_when_there_is_no_command(cli: Cli) -> None:
    done = cli("terminate", "plain", "--yes", "--workdir", cli.workdir)
    assert done.code == 2, done
    assert done.err == (
        'rtrain: plain has no terminate command: set `terminate = "COMMAND"` under '
        "[hosts.plain] in config.toml, or arm its guard with "
        "`rtrain guard plain --idle 30m --then 'COMMAND'`.\n"
    )


@pytest.mark.parametrize(
    "args,said",
    [
        (["guard", "nohost", "--idle", "30", "--then", "x"],
         "'30' is not an idle period: write a number and a unit, like 90s, 30m, 6h or 1h30m."),
        (["guard", "nohost", "--idle", "0s", "--then", "x"],
         "'0s' is not an idle period: it must be at least 1s."),
        (["guard", "nohost", "--idle", "5m", "--then", " "],
         "--then needs a command to run on the host."),
        (["guard", "nohost", "--off", "--idle", "5m"],
         "--off disarms the guard; it takes no --idle, --then, --ignore-sessions or "
         "--stalled-idle."),
        (["guard", "no host"], "is not a usable ssh alias"),
        (["terminate", "nohost"],
         "rtrain terminate asks before it ends nohost, and there is no terminal to ask on; "
         "pass --yes."),
    ],
)  # fmt: skip
def test_bad_input_is_one_sentence_before_any_ssh(cli: Cli, args: list[str], said: str) -> None:
    # `nohost` is no host the ssh config knows: any ssh would fail otherwise.
    done = cli(*args)
    assert done.code == 2, done
    [line] = done.err_lines
    assert line.startswith("rtrain: ") and said in line
    assert done.out == ""


def test_a_start_holds_a_lease_while_it_ships(cli: Cli, guarded: Guarded, link: TcpProxy) -> None:
    cli.file("cfg.yaml", "epochs: 1\n")
    with open(cli.cwd / "data.bin", "wb") as data:
        data.truncate(48 * 1024 * 1024)
    leases = cli.far_workdir / ".leases"
    link.delay_s = 0.05
    run_id = cli.new_run_id()
    starting = cli.spawn(
        "start", PROXIED_ALIAS, "-c", "cfg.yaml", "-d", "data.bin", "--run-id", run_id,
        "--workdir", cli.workdir, "--gpus", "0", "--no-follow", "--", "{python}", "-c", "pass",
    )  # fmt: skip
    wait_until(lambda: leases.is_dir() and any(leases.iterdir()), "the start's lease")
    link.stall()
    armed_at = time.time()
    guarded.arm()
    wait_until(lambda: guarded.looked_after(armed_at + 4), "looks past the idle period")
    assert guarded.state()["busy"] == "a transfer is in flight"
    assert guarded.call_count() == 0
    link.resume()
    done = starting.finish(timeout=120)
    assert done.code == 0, done
    wait_until(lambda: guarded.call_count() == 1, "the call once the run ended")


def test_terminate_asks_first_on_a_terminal(cli: Cli, guarded: Guarded, terminal: Tmux) -> None:
    guarded.arm("10m")
    asked = f"{rtrain_executable()} terminate plain --workdir {shlex.quote(cli.workdir)}"
    terminal.start(f'{asked}; echo "first exit $?"; {asked}; echo "second exit $?"')
    terminal.wait_for("Run plain's terminate command now? It may end the host and what is on it")
    terminal.tmux("send-keys", "-t", "t", "n", "Enter")
    shown = terminal.wait_for("first exit 1")
    assert "rtrain: plain was not terminated." in shown
    assert guarded.call_count() == 0
    terminal.tmux("send-keys", "-t", "t", "y", "Enter")
    shown = terminal.wait_for("second exit 0")
    assert any(line.startswith("plain: `echo fired") and "ran (exit 0)" in line for line in shown)
    assert guarded.call_count() == 1


def test_terminate_of_a_host_that_goes_away_says_so_and_the_command_runs_on(
    cli: Cli, guarded: Guarded, link: TcpProxy
) -> None:
    began = cli.far_workdir / "began"
    ended = cli.far_workdir / "ended"
    command = f"touch {shlex.quote(str(began))}; sleep 2; touch {shlex.quote(str(ended))}"
    armed = cli(
        "guard", PROXIED_ALIAS, "--idle", "10m", "--then", command, "--workdir", cli.workdir
    )
    assert armed.code == 0, armed
    terminating = cli.spawn("terminate", PROXIED_ALIAS, "--yes", "--workdir", cli.workdir)
    wait_until(began.exists, "the command's start")
    # The host "powers off": the connection goes while the command runs.
    link.cut()
    link.close()
    done = terminating.finish()
    assert done.code == 0, done
    assert done.err == (
        f"{PROXIED_ALIAS}: the connection ended while `{command}` ran, as it does when a host "
        "goes away; check with its provider that it did.\n"
    )
    # It ran on, in a session of its own, to its end.
    wait_until(ended.exists, "the command's end")
