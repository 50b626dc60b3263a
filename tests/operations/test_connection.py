"""The daemon's ssh connections: one supervised ControlMaster per alias, always the same safe
options, recovery from dead or hung masters, and clear, quick failures."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import time
from pathlib import Path

import pytest

from rtrain.client.daemon_client import DaemonClient
from rtrain.daemon.ssh.cipher_order import AES_GCM, local_cpu_has_aes
from tests.hosts import TcpProxy
from tests.operations import trainers
from tests.operations.harness import Ops, daemon_ssh_pids, master_pids
from tests.operations.processes import parent_of, ssh_processes

# ConnectTimeout is 10 s; the rest is margin for a loaded machine.
CONNECT_BOUND_S = 10 + 8


def option(argv: list[str], name: str) -> str | None:
    for i, word in enumerate(argv):
        if word == "-o" and argv[i + 1].startswith(f"{name}="):
            return argv[i + 1].split("=", 1)[1]
    return None


def test_one_master_per_alias_with_the_safe_options(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.STEPS, run_id=run_id)
    ops.tail(run_id)
    ops.request("host/preflight", {"host": "plain", "gpus": 0, "workdir": ops.workdir})
    ops.request("host/preflight", {"host": "nogpu", "gpus": 0})
    masters = master_pids(ops)
    assert len(masters) == 2
    by_alias = {ssh_processes()[pid][-1]: ssh_processes()[pid] for pid in masters}
    assert set(by_alias) == {"plain", "nogpu"}
    for argv in by_alias.values():
        assert argv[argv.index("-F") + 1] == str(ops.hosts.config_path)
        assert option(argv, "BatchMode") == "yes"
        assert option(argv, "ConnectTimeout") == "10"
        assert option(argv, "ServerAliveInterval") and option(argv, "ServerAliveCountMax")
        assert option(argv, "ControlMaster") == "yes"
        # The suite's config leaves ssh's cipher list alone, so on a CPU with AES
        # instructions every byte of the run went through AES-GCM (cipher_order.py).
        ciphers = option(argv, "Ciphers")
        if local_cpu_has_aes():
            assert ciphers is not None and tuple(ciphers.split(",")[:2]) == AES_GCM
        else:
            assert ciphers is None
        control = Path(option(argv, "ControlPath") or "")
        assert control.is_socket()
        assert stat.S_IMODE(control.parent.stat().st_mode) == 0o700
    hosts = {h.alias: h for h in ops.request("hosts/list").hosts}
    assert hosts["plain"].connection == "connected"
    assert hosts["plain"].transport == "exec"
    # Every command went through the master: still the same one.
    assert ops.status(run_id).state == "completed"
    assert sorted(master_pids(ops)) == sorted(masters)


def test_a_long_alias_keeps_a_short_control_path(ops: Ops) -> None:
    alias = "gpu-" + "x" * 200
    ops.hosts.add_alias(alias, ops.hosts.plain_port)
    result = ops.request("host/preflight", {"host": alias, "gpus": 2})
    assert result.ok, result.reasons
    [master] = master_pids(ops)
    control = option(ssh_processes()[master], "ControlPath") or ""
    # sun_path holds 108 bytes, and ssh adds a temporary suffix while binding.
    assert len(control.encode()) + 17 < 108
    assert alias not in control


def test_a_long_runtime_dir_moves_control_sockets_to_a_private_short_dir(
    ops: Ops, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Short enough for the daemon's own socket, too long for runtime/rtrain/cm/<digest>.
    runtime = ops.daemon.root / ("r" * (75 - len(str(ops.daemon.root)) - 1))
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    with DaemonClient.connect(name="rtrain-tests", timeout=60) as client:
        pid = client.request("daemon/info").pid
        try:
            assert client.request("host/preflight", {"host": "plain", "gpus": 0}).ok
            [argv] = [
                argv
                for child, argv in ssh_processes().items()
                if "-N" in argv and parent_of(child) == pid
            ]
            assert os.path.dirname(option(argv, "ControlPath") or "") == (
                f"/tmp/rtrain-cm-{os.getuid()}"
            )
            control = Path(option(argv, "ControlPath") or "")
            assert len(str(control)) + 17 < 108
            info = control.parent.lstat()
            assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.getuid()
        finally:
            client.request("daemon/stop")
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_dead_master_is_restarted_on_the_next_need(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.SLEEPER, run_id=run_id)
    [first] = master_pids(ops)
    os.kill(first, signal.SIGKILL)
    assert ops.status(run_id).state == "running"
    [second] = master_pids(ops)
    assert second != first

    # An sshd restart that drops every session (the network went away and came back).
    ops.hosts.stop_plain(drop_sessions=True)
    ops.hosts.start_plain()
    assert ops.status(run_id).state == "running"
    [third] = master_pids(ops)
    assert third != second


def test_a_hung_master_is_replaced(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.SLEEPER, run_id=run_id)
    [hung] = master_pids(ops)
    os.kill(hung, signal.SIGSTOP)
    try:
        began = time.monotonic()
        run = ops.status(run_id)
        took = time.monotonic() - began
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(hung, signal.SIGCONT)
    assert run.state == "running"
    # Well within the status command's own 60 s timeout.
    assert took < 30, took
    assert hung not in master_pids(ops)


def test_a_master_orphaned_by_kill_9_is_not_left_behind(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.SLEEPER, run_id=run_id)
    [orphan] = master_pids(ops)
    ops.kill_daemon()
    assert ops.status(run_id).state == "running"
    masters = master_pids(ops)
    assert len(masters) == 1
    assert orphan not in masters


def test_closed_port_fails_quickly_and_clearly(ops: Ops) -> None:
    began = time.monotonic()
    result = ops.request("host/preflight", {"host": "closed"})
    assert time.monotonic() - began < CONNECT_BOUND_S
    assert not result.ok
    [reason] = result.reasons
    assert reason.startswith("host unreachable: closed: ")
    assert "Connection refused" in reason

    error = ops.error(
        "run/start",
        {
            "host": "closed",
            "runId": ops.new_run_id(),
            "config": str(ops.file("c.yaml", "a: 1\n")),
        },
    )
    assert error.kind == "host_unreachable"
    hosts = {h.alias: h for h in ops.request("hosts/list").hosts}
    assert hosts["closed"].connection in ("failed", "disconnected")
    assert "Connection refused" in (hosts["closed"].last_error or "")


@pytest.mark.slow
def test_a_silent_host_fails_within_the_connect_timeout(ops: Ops) -> None:
    with TcpProxy(ops.hosts.plain_port) as proxy:
        ops.hosts.add_alias("blackhole", proxy.port)
        proxy.stall()  # TCP connects, then nothing ever answers
        began = time.monotonic()
        result = ops.request("host/preflight", {"host": "blackhole", "gpus": 0})
        took = time.monotonic() - began
    assert took < CONNECT_BOUND_S, took
    assert not result.ok
    assert result.reasons[0].startswith("host unreachable: blackhole: ")


def test_password_only_host_fails_fast_without_a_prompt(ops: Ops) -> None:
    began = time.monotonic()
    error = ops.error(
        "run/start",
        {
            "host": "passonly",
            "runId": ops.new_run_id(),
            "config": str(ops.file("c.yaml", "a: 1\n")),
        },
    )
    assert time.monotonic() - began < CONNECT_BOUND_S
    # A password is what `rtrain login` is for; keys are the other way in.
    assert error.kind == "login_required"
    assert "`rtrain login passonly`" in error.message
    assert "key authentication" in error.message
    again = ops.error("host/preflight", {"host": "passonly"})
    assert again.kind == "login_required"
    # No ssh of this daemon is left waiting at a prompt.
    assert daemon_ssh_pids(ops) == []


def test_an_alias_missing_from_the_ssh_config(ops: Ops) -> None:
    result = ops.request("host/preflight", {"host": "no-such-alias.invalid"})
    assert not result.ok
    assert result.reasons[0].startswith("host unreachable: no-such-alias.invalid: ")


def test_the_local_host_needs_no_ssh(ops: Ops) -> None:
    result = ops.request("host/preflight", {"host": "local", "gpus": 0, "workdir": ops.workdir})
    assert result.ok, result.reasons
    assert result.transport == "local"
    run_id = ops.new_run_id("local")
    ops.start(trainers.STEPS, run_id=run_id, host="local")
    tailed, chunks = ops.tail(run_id, host="local")
    assert tailed.run.state == "completed"
    assert chunks.data == (ops.local_workdir / run_id / "train.log").read_bytes()
    assert daemon_ssh_pids(ops) == []


@pytest.mark.parametrize("alias", ["plain"])
def test_hosts_list_shows_connections(ops: Ops, alias: str) -> None:
    assert alias not in {h.alias for h in ops.request("hosts/list").hosts}
    ops.request("host/preflight", {"host": alias, "gpus": 0})
    hosts = {h.alias: h for h in ops.request("hosts/list").hosts}
    assert hosts[alias].connection == "connected"
    assert hosts["local"].transport == "local"
