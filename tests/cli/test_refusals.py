"""Input the CLI refuses itself: one sentence, exit 2, and no daemon or ssh ever involved."""

from __future__ import annotations

import pytest

from tests.cli.conftest import Cli


def assert_nothing_contacted(cli: Cli) -> None:
    assert cli.daemon.daemon_pids() == []
    assert not cli.daemon.socket.exists()


def test_missing_config_is_refused_before_the_daemon(cli: Cli) -> None:
    done = cli("start", "plain", "-c", "nope.yaml", "--run-id", cli.new_run_id())
    assert done.code == 2, done
    assert done.out == ""
    assert done.err_lines[-1] == (
        "Error: Invalid value for '--config' / '-c': Path 'nope.yaml' does not exist."
    )
    assert_nothing_contacted(cli)


def test_missing_dataset_is_refused_before_the_daemon(cli: Cli) -> None:
    cli.file("cfg.yaml", "steps: 1\n")
    done = cli("start", "plain", "-c", "cfg.yaml", "-d", "gone.jsonl")
    assert done.code == 2, done
    assert done.err_lines[-1] == (
        "Error: Invalid value for '--dataset' / '-d': Path 'gone.jsonl' does not exist."
    )
    assert_nothing_contacted(cli)


# {trap} is a file that exists only if some shell ran the attacker's text.
BAD_INPUTS = [
    pytest.param(["start", "plain", "-c", "cfg.yaml", "--run-id", "x;touch {trap}"], "run id",
                 id="run-id-semicolon"),
    pytest.param(["start", "plain", "-c", "cfg.yaml", "--run-id", "$(touch {trap})"], "run id",
                 id="run-id-substitution"),
    pytest.param(["status", "plain", "$(id)"], "run id", id="status-run-id"),
    pytest.param(["tail", "plain", "a`touch {trap}`"], "run id", id="tail-run-id-backticks"),
    pytest.param(["start", "plain", "-c", "cfg.yaml", "--workdir", "~/x; rm -rf /"], "workdir",
                 id="workdir-command"),
    pytest.param(["status", "--", "-oProxyCommand=touch {trap}", "r1"], "host",
                 id="host-ssh-option"),
    pytest.param(["preflight", "--", "-oProxyCommand=touch {trap}"], "host",
                 id="preflight-host-option"),
    pytest.param(["preflight", "plain", "--python", "python3; touch {trap}"], "python",
                 id="python-command"),
    pytest.param(["fetch", "plain", "r1", "../../etc/passwd"], "outside the run directory",
                 id="fetch-outside"),
    pytest.param(["start", "plain", "-c", "cfg.yaml", "--secret", "A;B"], "secret name",
                 id="secret-name"),
    pytest.param(["start", "plain", "-c", "cfg.yaml", "--max-duration", "6"],
                 "--max-duration: '6' is not a maximum duration", id="max-duration-no-unit"),
    pytest.param(["start", "plain", "-c", "cfg.yaml", "--max-duration", "$(touch {trap})"],
                 "maximum duration", id="max-duration-substitution"),
    pytest.param(["start", "plain", "-c", "cfg.yaml", "--stall-after", "soon"],
                 "--stall-after: 'soon' is not a stall period", id="stall-after-word"),
    pytest.param(["start", "plain", "-c", "cfg.yaml", "--on-stall", "kill"], "--on-stall",
                 id="on-stall-word"),
    pytest.param(["hosts", "--price", "plain", "cheap"], "is not a rate", id="price-word"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "named"), BAD_INPUTS)
def test_bad_input_is_one_sentence_and_exit_2(cli: Cli, args: list[str], named: str) -> None:
    cli.file("cfg.yaml", "steps: 1\n")
    trap = cli.cwd / "pwned"
    done = cli(*[arg.replace("{trap}", str(trap)) for arg in args])
    assert done.code == 2, done
    assert done.out == ""
    (sentence,) = done.err_lines
    assert sentence.startswith("rtrain: ") and sentence.endswith("."), sentence
    assert named in sentence, sentence
    assert not trap.exists()
    assert_nothing_contacted(cli)


def test_an_ssh_option_as_host_is_no_option(cli: Cli) -> None:
    # Without `--` the parser itself refuses it; either way it never reaches ssh.
    done = cli("status", "-oProxyCommand=touch pwned", "r1")
    assert done.code == 2, done
    assert "No such option" in done.err
    assert not (cli.cwd / "pwned").exists()
    assert_nothing_contacted(cli)
