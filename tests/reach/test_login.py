"""`rtrain login`: a host that asks for a password as well as a key, logged in to once on a
terminal, then reached by every command through that connection; before the login and after
it ends, one sentence naming the command, at once, with its own exit status."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator

import pytest

from rtrain.client.cli.exit_codes import Exit
from rtrain.daemon.ssh.control_master import LOGIN_PURPOSE, control_path
from tests.cli.conftest import WAITING_TRAINER, Cli
from tests.hosts import GPU_USER
from tests.hosts.login_host import LoginHost
from tests.reach.typed_login import login_on_a_terminal

# The plain host behind the login node as its bastion: the password is the bastion's.
BEHIND_LOGIN = "behindlogin"
SENTENCE = "asks for a password or a second factor, which rtrain never types: log in once with"


@pytest.fixture
def node(cli: Cli, login_node: LoginHost) -> Iterator[LoginHost]:
    """The login node, its work directory removed and its login ended after the test."""
    try:
        yield login_node
    finally:
        for alias in (login_node.alias, BEHIND_LOGIN):
            pid = login_master_pid(cli, alias)
            if pid is not None:
                os.kill(pid, signal.SIGTERM)
        shutil.rmtree(login_node.home / ".rtrain-cli" / cli.tag, ignore_errors=True)


def login_master_pid(cli: Cli, alias: str) -> int | None:
    """The pid of the login master `rtrain login` left for `alias`, as ssh itself tells it."""
    path = control_path(cli.daemon.runtime / "rtrain", alias, cli.hosts.config_path, LOGIN_PURPOSE)
    checked = subprocess.run(
        [
            "ssh",
            "-F",
            str(cli.hosts.config_path),
            "-o",
            f"ControlPath={path}",
            "-O",
            "check",
            alias,
        ],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    found = re.search(r"Master running \(pid=(\d+)\)", checked.stderr)
    return int(found.group(1)) if found else None


def connections_to(node: LoginHost) -> int:
    return node.sshd.log_path.read_text(errors="replace").count("Connection from ")


def assert_login_required(cli: Cli, alias: str, *words: str) -> None:
    done = cli(*words)
    assert done.code == Exit.LOGIN_REQUIRED, done
    assert int(Exit.LOGIN_REQUIRED) == 10  # the number docs/cli.md promises
    assert SENTENCE in done.err and f"`rtrain login {alias}`" in done.err, done
    assert "password:" not in done.err.lower(), done


def test_a_login_serves_every_command_until_it_ends(cli: Cli, node: LoginHost) -> None:
    alias = node.alias
    waiting = cli.new_run_id("waits")
    # Before any login: the sentence, its exit status, and no prompt (stdin is no terminal).
    assert_login_required(cli, alias, "status", alias, waiting)
    knocks = connections_to(node)
    refused = cli("preflight", alias, "--json")
    assert refused.code == 10, refused
    assert json.loads(refused.err)["error"]["kind"] == "login_required", refused
    # The answer came without knocking again: a site's fail2ban counts every BatchMode try.
    assert connections_to(node) == knocks

    typed = login_on_a_terminal(alias, node.password, cli.env, cli.cwd)
    assert typed.code == 0, typed.screen
    assert f"logged in to {alias} (since " in typed.screen, typed.screen

    ready = cli("preflight", alias, "--gpus", "0", "--workdir", cli.workdir)
    assert ready.code == 0 and f"{alias} is ready to train" in ready.out, ready
    done_id = cli.new_run_id("done")
    cli.start(done_id, "{python}", "-c", "print('step 1 | loss 0.5')", host=alias)
    cli.wait_state(alias, done_id, "completed")
    cli.start(waiting, "{python}", "-c", WAITING_TRAINER, host=alias)
    cli.wait_state(alias, waiting, "running")
    stopped = cli("stop", alias, waiting)
    assert stopped.code == 0, stopped
    cli.wait_state(alias, waiting, "stopped")

    listed = {h["alias"]: h for h in cli("hosts", "--json").json()}
    assert listed[alias]["connection"] == "connected"
    assert isinstance(listed[alias]["loginSince"], float), listed[alias]
    table = cli("hosts").out_lines
    assert "LOGIN" in table[0].split(), table
    assert any(line.startswith(alias) and " since " in line for line in table), table
    assert "loginSince" not in listed["local"], listed["local"]

    # The login is the user's, not the daemon's: a new daemon finds it and uses it.
    assert cli("daemon", "stop").code == 0
    echoed = cli("exec", alias, done_id, "--", "echo", "still in")
    assert (echoed.code, echoed.out) == (0, "still in\n"), echoed

    # The login ends (its ssh is killed): the same sentence again, at once.
    pid = login_master_pid(cli, alias)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert_login_required(cli, alias, "status", alias, waiting + "-other")
    listed = {h["alias"]: h for h in cli("hosts", "--json").json()}
    assert "loginSince" not in listed[alias], listed[alias]

    # Logged in again, then out: the host asks again.
    again = login_on_a_terminal(alias, node.password, cli.env, cli.cwd)
    assert again.code == 0, again.screen
    assert cli("status", alias, done_id).out.strip() == "completed"
    out = cli("logout", alias)
    assert (out.code, out.err.strip()) == (0, f"logged out of {alias}"), out
    assert login_master_pid(cli, alias) is None
    assert_login_required(cli, alias, "exec", alias, done_id, "--", "true")


def test_a_host_that_needs_no_login_says_so(cli: Cli) -> None:
    typed = login_on_a_terminal("plain", None, cli.env, cli.cwd)
    assert typed.code == 0, typed.screen
    assert "plain lets rtrain in with your keys; no login needed." in typed.screen


def test_a_wrong_password_logs_in_nothing(cli: Cli, node: LoginHost) -> None:
    typed = login_on_a_terminal(node.alias, "not-the-password", cli.env, cli.cwd)
    # ssh asks again after a wrong password; the test answers every prompt the same way.
    assert typed.code == 1, typed.screen
    assert f"ssh did not log in to {node.alias}" in typed.screen, typed.screen
    assert_login_required(cli, node.alias, "status", node.alias, "nosuch")


def test_login_needs_a_terminal_and_a_host_it_can_reach(cli: Cli, node: LoginHost) -> None:
    piped = cli("login", node.alias)
    assert piped.code == 2 and "needs a terminal" in piped.err, piped
    unreachable = cli("login", "closed")
    assert unreachable.code == 1 and "host unreachable: closed" in unreachable.err, unreachable
    bad = cli("login", "bad;host")
    assert bad.code == 2, bad


def test_a_bastion_that_asks_for_a_password(cli: Cli, node: LoginHost) -> None:
    cli.hosts.add_alias(BEHIND_LOGIN, cli.hosts.plain_port, GPU_USER, {"ProxyJump": node.alias})
    assert_login_required(cli, BEHIND_LOGIN, "status", BEHIND_LOGIN, "nosuch")
    typed = login_on_a_terminal(BEHIND_LOGIN, node.password, cli.env, cli.cwd)
    assert typed.code == 0, typed.screen
    ready = cli("preflight", BEHIND_LOGIN, "--gpus", "0", "--workdir", cli.workdir)
    assert ready.code == 0, ready
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", "print('step 1 | loss 0.5')", host=BEHIND_LOGIN)
    cli.wait_state(BEHIND_LOGIN, run_id, "completed")
