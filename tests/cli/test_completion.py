"""Shell completion (bash, through typer's own protocol): hosts and run ids, never a daemon."""

from __future__ import annotations

import subprocess

from tests.cli.conftest import Cli
from tests.cli.rtrain_command import COMMAND_TIMEOUT_S, rtrain_executable


def complete(cli: Cli, words: str) -> list[str]:
    """What bash's TAB offers after `words` (the completion script's own env protocol)."""
    words_list = words.split(" ")
    env = {
        **cli.env,
        "_RTRAIN_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words_list) - 1),
    }
    done = subprocess.run(
        [rtrain_executable()],
        env=env,
        cwd=cli.cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
    )
    assert (done.returncode, done.stderr) == (0, ""), done
    return done.stdout.split()


def test_hosts_come_from_the_ssh_config_without_a_daemon(cli: Cli) -> None:
    assert complete(cli, "rtrain status pl") == ["plain"]
    # Other suites may add aliases to the shared config; these two are always there.
    offered = complete(cli, "rtrain preflight p")
    assert {"passonly", "plain"} <= set(offered), offered
    assert all(name.startswith("p") for name in offered), offered
    assert "local" in complete(cli, "rtrain start ")
    assert cli.daemon.daemon_pids() == []
    assert not cli.daemon.socket.exists()


def test_run_ids_come_from_a_running_daemon_and_never_start_one(cli: Cli) -> None:
    assert complete(cli, "rtrain status plain ") == []
    assert cli.daemon.daemon_pids() == []
    assert not cli.daemon.socket.exists()

    run_id = cli.new_run_id("done")
    cli.start(run_id, "{python}", "-c", "print('ok')")
    assert complete(cli, "rtrain tail plain done-") == [run_id]
    assert complete(cli, "rtrain status local ") == []
