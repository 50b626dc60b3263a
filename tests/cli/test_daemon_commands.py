"""`rtrain --version` and `rtrain daemon ...` as a user sees them."""

from __future__ import annotations

import rtrain
from tests.cli.conftest import Cli
from tests.cli.rtrain_command import run_rtrain


def test_version_answers_without_a_daemon(cli: Cli) -> None:
    for flag in ("--version", "-V"):
        done = cli(flag)
        assert (done.code, done.out, done.err) == (0, f"rtrain {rtrain.__version__}\n", ""), done
    assert cli.daemon.daemon_pids() == []


def test_daemon_start_status_stop(cli: Cli) -> None:
    idle = cli("daemon", "status")
    assert idle.code == 1, idle
    assert idle.err == f"rtrain daemon is not running (socket {cli.daemon.socket})\n"
    idle_json = cli("daemon", "status", "--json")
    assert idle_json.code == 1, idle_json
    assert idle_json.json() == {"running": False, "socketPath": str(cli.daemon.socket)}

    started = cli("daemon", "start")
    assert started.code == 0, started
    (pid,) = cli.daemon.daemon_pids()
    assert started.err == f"rtrain daemon running (pid {pid}, socket {cli.daemon.socket})\n"

    status = cli("daemon", "status")
    assert status.code == 0, status
    assert status.out_lines[0].startswith(f"rtrain daemon {rtrain.__version__} running: pid {pid}")
    assert status.out_lines[1:] == [f"  socket: {cli.daemon.socket}", f"  log:    {cli.daemon.log}"]
    info = cli("daemon", "status", "--json").json()
    assert (info["running"], info["pid"], info["version"]) == (True, pid, rtrain.__version__)

    stopped = cli("daemon", "stop")
    assert (stopped.code, stopped.err) == (0, f"stopped rtrain daemon (pid {pid})\n"), stopped
    assert cli.daemon.daemon_pids() == []
    again = cli("daemon", "stop")
    assert (again.code, again.err) == (0, "rtrain daemon is not running\n"), again


def test_no_spawn_fails_instead_of_starting_a_daemon(cli: Cli) -> None:
    for args, env in (
        (["--no-spawn", "runs"], cli.env),
        (["runs"], {**cli.env, "RTRAIN_NO_SPAWN": "1"}),
    ):
        done = run_rtrain(args, env=env, cwd=cli.cwd)
        assert (done.code, done.out) == (1, ""), done
        (sentence,) = done.err_lines
        assert sentence.startswith("rtrain: No rtrain daemon is running; start one with"), done
        assert cli.daemon.daemon_pids() == []
        assert not cli.daemon.socket.exists()
