"""guard.sh and guard_loop.sh on the suite's real sshd: the guard fires once the host has been
idle long enough, never while a run runs or a person is logged in, and only once a period.

Each test has a work directory of its own, so other runs on the shared test user never count.
The tests that are not about sessions ignore them: other tests open PTYs on the same machine.
"""

from __future__ import annotations

import base64
import shlex
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from rtrain.daemon.remote import script
from tests.hosts import GPU_USER, TestHosts

TIMEOUT_S = 30.0


def far(hosts: TestHosts, operation: str, *args: str, stdin: bytes = b"") -> list[list[str]]:
    """Run OPERATION's script on `plain` over a fresh ssh connection, as the daemon does."""
    line = shlex.join(["sh", "-c", script(operation), "rtrain", *args])
    done = subprocess.run(
        hosts.ssh_argv("plain", line, options=["-o", "BatchMode=yes"]),
        input=stdin,
        capture_output=True,
        timeout=TIMEOUT_S,
    )
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    return [row.split("\t") for row in done.stdout.decode().splitlines()]


def field(rows: list[list[str]], key: str) -> list[str] | None:
    found = [row[1:] for row in rows if row[0] == key]
    return found[-1] if found else None


def wait_for(check: object, what: str, timeout: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


class Guarded:
    def __init__(self, hosts: TestHosts) -> None:
        self.hosts = hosts
        self.name = f"guard-test-{uuid.uuid4().hex[:10]}"
        self.workdir = f"~/{self.name}"
        self.path = hosts.home(GPU_USER) / self.name
        self.calls = self.path / "calls"

    def arm(
        self, idle: int, command: str | None = None, ignore: bool = True, stalled: bool = False
    ) -> list[list[str]]:
        command = command or f"echo fired >> {shlex.quote(str(self.calls))}"
        loop = script("guard_loop").encode()
        return far(
            self.hosts,
            "guard",
            self.workdir,
            "arm",
            str(idle),
            "1" if ignore else "0",
            command,
            *(["1"] if stalled else []),
            stdin=loop,
        )

    def show(self) -> list[list[str]]:
        return far(self.hosts, "guard", self.workdir, "show")

    def seen(self) -> list[str]:
        """The guard's last look: `idle|busy CHECKED_AT SINCE|REASON`."""
        text = (self.path / ".guard" / "seen").read_text() if self.seen_file.exists() else ""
        return text.rstrip("\n").split("\t") if text else []

    @property
    def seen_file(self) -> Path:
        return self.path / ".guard" / "seen"

    def looked_after(self, moment: float) -> bool:
        seen = self.seen()
        return len(seen) >= 2 and seen[1].isdigit() and int(seen[1]) > moment

    def call_count(self) -> int:
        return self.calls.read_text().count("fired\n") if self.calls.exists() else 0


@pytest.fixture
def guarded(ssh_hosts: TestHosts) -> Iterator[Guarded]:
    guarded = Guarded(ssh_hosts)
    yield guarded
    far(ssh_hosts, "guard", guarded.workdir, "off")
    subprocess.run(["rm", "-rf", "--", str(guarded.path)], check=False)


def pid_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def test_the_guard_fires_once_after_the_idle_period_with_ssh_gone(guarded: Guarded) -> None:
    armed_at = time.time()
    rows = guarded.arm(2)
    assert field(rows, "guard") == ["armed"]
    pid = int(field(rows, "pid")[0])  # type: ignore[index]
    # The ssh connection that armed it has ended; the guard lives on in a session of its own.
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    assert stat[3] == str(pid)
    wait_for(lambda: guarded.call_count() >= 1, "the terminate command's call")
    # Not before the idle period, as the host counts it: in whole seconds of `date +%s`.
    assert time.time() - armed_at >= 1
    # Several more looks at the same idle period: it does not run the command again.
    fired_at = time.time()
    wait_for(lambda: guarded.looked_after(fired_at + 3), "three more looks")
    assert guarded.call_count() == 1
    log = (guarded.path / ".guard" / "log").read_text()
    assert "fired: the host was idle since" in log and "exit 0" in log
    shown = guarded.show()
    assert field(shown, "guard") == ["armed"]
    last = field(shown, "last")
    assert last is not None and last[1] == "0"


def test_the_guard_waits_while_a_run_runs(ssh_hosts: TestHosts, guarded: Guarded) -> None:
    run_id = f"run-{uuid.uuid4().hex[:10]}"
    run_dir = field(far(ssh_hosts, "prepare", guarded.workdir, run_id), "run_dir")[0]  # type: ignore[index]
    launched = far(ssh_hosts, "launch", run_dir, run_id, "python3", "sleep", "600")
    assert field(launched, "pid") is not None
    armed_at = time.time()
    guarded.arm(2)
    # Past the idle period several looks say busy because of the run; nothing fired.
    wait_for(lambda: guarded.looked_after(armed_at + 4), "looks past the idle period")
    seen = guarded.seen()
    assert seen[0] == "busy" and run_id in seen[2]
    assert guarded.call_count() == 0
    # The run ends during the stop, which may take seconds under load: the idle period counts
    # from then, so it is measured from before the stop.
    stopping_at = time.time()
    far(ssh_hosts, "stop", run_dir, run_id, "1", "0")
    wait_for(lambda: guarded.call_count() == 1, "the call once the run ended")
    assert time.time() - stopping_at >= 1


def test_the_guard_waits_while_an_interactive_session_is_open(
    ssh_hosts: TestHosts, guarded: Guarded
) -> None:
    session = subprocess.Popen(
        ssh_hosts.ssh_argv("plain", options=["-tt", "-o", "BatchMode=yes"]),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert session.stdin is not None
        marker = guarded.path / "logged-in"
        guarded.path.mkdir(exist_ok=True)
        subprocess.run(["chown", GPU_USER, str(guarded.path)], check=True)
        session.stdin.write(f"touch {shlex.quote(str(marker))}\n".encode())
        session.stdin.flush()
        wait_for(marker.exists, "the interactive shell")
        armed_at = time.time()
        guarded.arm(2, ignore=False)
        wait_for(lambda: guarded.looked_after(armed_at + 4), "looks past the idle period")
        seen = guarded.seen()
        assert seen[0] == "busy" and "ssh session" in seen[2]
        assert guarded.call_count() == 0
    finally:
        session.communicate(b"exit\n", timeout=TIMEOUT_S)
    # Other tests' terminals on this machine may delay it, never stop it for long.
    wait_for(lambda: guarded.call_count() == 1, "the call once the session closed", 60)


def test_arming_again_replaces_the_guard_and_it_fires_once(guarded: Guarded) -> None:
    first = guarded.arm(600, command=f"echo first >> {shlex.quote(str(guarded.calls))}")
    first_pid = int(field(first, "pid")[0])  # type: ignore[index]
    second = guarded.arm(2)
    second_pid = int(field(second, "pid")[0])  # type: ignore[index]
    assert second_pid != first_pid and not pid_alive(first_pid)
    assert field(guarded.show(), "settings") == ["2", "1", "0"]
    wait_for(lambda: guarded.call_count() >= 1, "the call")
    fired_at = time.time()
    wait_for(lambda: guarded.looked_after(fired_at + 3), "three more looks")
    assert guarded.calls.read_text() == "fired\n"


def test_disarming_ends_the_guard(guarded: Guarded) -> None:
    rows = guarded.arm(3)
    pid = int(field(rows, "pid")[0])  # type: ignore[index]
    off = far(guarded.hosts, "guard", guarded.workdir, "off")
    assert field(off, "guard") == ["off"]
    # The process that could have fired is gone, so nothing can run the command any more.
    assert not pid_alive(pid)
    assert field(guarded.show(), "guard") == ["off"]
    assert guarded.call_count() == 0


def test_the_command_reaches_the_shell_whole(guarded: Guarded) -> None:
    odd = guarded.path / "it's $HOME; `x`"
    guarded.arm(1, command=f"printf '%s\\n' \"$HOME\" > {shlex.quote(str(odd))}")
    wait_for(odd.exists, "the command's file")
    wait_for(lambda: odd.read_text() != "", "the command's output")
    assert odd.read_text() == f"{guarded.hosts.home(GPU_USER)}\n"


def far_answer(hosts: TestHosts, operation: str, *args: str) -> tuple[int, list[list[str]]]:
    """As `far`, whatever the script's exit status."""
    line = shlex.join(["sh", "-c", script(operation), "rtrain", *args])
    done = subprocess.run(
        hosts.ssh_argv("plain", line, options=["-o", "BatchMode=yes"]),
        capture_output=True,
        timeout=TIMEOUT_S,
    )
    return done.returncode, [row.split("\t") for row in done.stdout.decode().splitlines()]


def launch_sleeper(hosts: TestHosts, guarded: Guarded, setup: str | None = None) -> tuple[str, str]:
    """A run of `sleep 600` in the guarded workdir (its setup first, when given)."""
    run_id = f"run-{uuid.uuid4().hex[:10]}"
    run_dir = field(far(hosts, "prepare", guarded.workdir, run_id), "run_dir")[0]  # type: ignore[index]
    stdin = b""
    if setup is not None:
        stdin = b"+setup\t" + base64.b64encode(setup.encode()) + b"\n"
    launched = far(hosts, "launch", run_dir, run_id, "python3", "sleep", "600", stdin=stdin)
    assert field(launched, "pid") is not None
    return run_dir, run_id


def test_a_live_transfer_lease_keeps_the_host_busy(ssh_hosts: TestHosts, guarded: Guarded) -> None:
    token = uuid.uuid4().hex[:16]
    taken = far(ssh_hosts, "lease", guarded.workdir, token, "600")
    assert field(taken, "lease")[0] == token  # type: ignore[index]
    armed_at = time.time()
    guarded.arm(2)
    wait_for(lambda: guarded.looked_after(armed_at + 4), "looks past the idle period")
    seen = guarded.seen()
    assert seen[0] == "busy" and "transfer" in seen[2]
    assert guarded.call_count() == 0
    assert field(far(ssh_hosts, "lease", guarded.workdir, token, "0"), "dropped") == [token]
    wait_for(lambda: guarded.call_count() == 1, "the call once the lease was dropped")


def test_an_expired_lease_is_nobody_s(ssh_hosts: TestHosts, guarded: Guarded) -> None:
    # A daemon that took a lease and died never renews it: it expires by the host's clock.
    far(ssh_hosts, "lease", guarded.workdir, uuid.uuid4().hex[:16], "1")
    guarded.arm(2)
    wait_for(lambda: guarded.call_count() == 1, "the call past the lease's expiry")


def test_the_look_counts_a_run_in_its_setup_as_busy(ssh_hosts: TestHosts, guarded: Guarded) -> None:
    assert far(ssh_hosts, "guard_loop", guarded.workdir, "look", "1") == [
        ["busy", "the work directory cannot be read"]
    ]
    guarded.path.mkdir()
    subprocess.run(["chown", GPU_USER, str(guarded.path)], check=True)
    assert far(ssh_hosts, "guard_loop", guarded.workdir, "look", "1") == [["idle"]]
    run_dir, run_id = launch_sleeper(ssh_hosts, guarded, setup="sleep 600")
    assert far(ssh_hosts, "guard_loop", guarded.workdir, "look", "1") == [
        ["busy", f"run {run_id} is running"]
    ]
    far(ssh_hosts, "stop", run_dir, run_id, "1", "1")
    assert far(ssh_hosts, "guard_loop", guarded.workdir, "look", "1") == [["idle"]]


def test_terminate_refuses_a_busy_host_unless_forced(
    ssh_hosts: TestHosts, guarded: Guarded
) -> None:
    command = f"echo terminated >> {shlex.quote(str(guarded.calls))}; echo bye"
    run_dir, run_id = launch_sleeper(ssh_hosts, guarded)
    rc, rows = far_answer(
        ssh_hosts, "guard_loop", guarded.workdir, "terminate", "0", "30", "given", command
    )
    assert rc == 5 and field(rows, "error") == ["busy", f"run {run_id} is running"]
    assert not guarded.calls.exists()
    rows = far(ssh_hosts, "guard_loop", guarded.workdir, "terminate", "1", "30", "given", command)
    assert field(rows, "exit") == ["0"] and field(rows, "output") == ["bye"]
    assert guarded.calls.read_text() == "terminated\n"
    log = (guarded.path / ".guard" / "log").read_text()
    assert "rtrain terminate --force: echo terminated" in log and "bye\n" in log
    far(ssh_hosts, "stop", run_dir, run_id, "1", "1")


def test_terminate_runs_the_armed_command_and_says_when_there_is_none(
    ssh_hosts: TestHosts, guarded: Guarded
) -> None:
    rc, rows = far_answer(ssh_hosts, "guard_loop", guarded.workdir, "terminate", "0", "30", "armed")
    assert rc == 8 and field(rows, "error") == ["no_command"]
    guarded.arm(600)
    rows = far(ssh_hosts, "guard_loop", guarded.workdir, "terminate", "0", "30", "armed")
    assert field(rows, "exit") == ["0"]
    assert guarded.call_count() == 1


def test_terminate_outlives_a_command_that_takes_long(
    ssh_hosts: TestHosts, guarded: Guarded
) -> None:
    # A command that ends the host may end the ssh session too: it runs in its own session.
    command = f"sleep 2; echo fired >> {shlex.quote(str(guarded.calls))}"
    guarded.path.mkdir()
    subprocess.run(["chown", GPU_USER, str(guarded.path)], check=True)
    rows = far(ssh_hosts, "guard_loop", guarded.workdir, "terminate", "0", "0", "given", command)
    assert "running" in [row[0] for row in rows]
    wait_for(lambda: guarded.call_count() == 1, "the command, after its ssh session ended")


def test_a_stalled_run_keeps_the_host_busy_unless_the_host_opted_in(
    ssh_hosts: TestHosts, guarded: Guarded
) -> None:
    run_dir, run_id = launch_sleeper(ssh_hosts, guarded)
    # limits.sh's word that the run went still (log and GPUs), as it writes it.
    stalled = guarded.path / run_id / ".rtrain" / "stalled"
    stalled.write_text(f"{int(time.time())}\n")
    subprocess.run(["chown", GPU_USER, str(stalled)], check=True)
    armed_at = time.time()
    guarded.arm(2)
    wait_for(lambda: guarded.looked_after(armed_at + 4), "looks past the idle period")
    assert guarded.seen()[0] == "busy" and guarded.call_count() == 0
    assert field(guarded.arm(2, stalled=True), "settings") == ["2", "1", "1"]
    wait_for(lambda: guarded.call_count() == 1, "the call with the run stalled")
    far(ssh_hosts, "stop", run_dir, run_id, "1", "1")
