"""How the command presents itself: `-h`, `python -m rtrain`, usage lines a person reads,
filters that match nothing, a state that does not exist."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cli.conftest import Cli

COMMANDS = [
    ["preflight"], ["start"], ["tail"], ["status"], ["metrics"], ["fetch"], ["stop"], ["runs"],
    ["hosts"], ["restart"], ["rm"], ["exec"], ["shell"], ["pools"], ["sweep"], ["compare"],
    ["daemon", "start"], ["daemon", "stop"], ["daemon", "status"], ["daemon", "logs"],
    ["daemon", "run"], ["protocol", "schema"],
]  # fmt: skip


def test_dash_h_is_help_everywhere(cli: Cli) -> None:
    top = cli("-h")
    assert top.code == 0, top
    assert top.out.startswith("Usage: rtrain [OPTIONS] COMMAND [ARGS]...")
    assert "-h, --help" in top.out
    for words in COMMANDS:
        done = cli(*words, "-h")
        assert done.code == 0, done
        assert done.out.startswith(f"Usage: rtrain {' '.join(words)} "), done


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_usage_lines_name_arguments_without_braces(cli: Cli, words: list[str]) -> None:
    usage = cli(*words, "--help").out_lines[0]
    assert "{" not in usage and "}" not in usage, usage


def test_usage_lines_read_as_written(cli: Cli) -> None:
    assert cli("status", "-h").out_lines[0] == "Usage: rtrain status [OPTIONS] HOST RUN"
    assert cli("fetch", "-h").out_lines[0] == "Usage: rtrain fetch [OPTIONS] HOST RUN PATH"


def test_python_dash_m_rtrain_is_the_command(cli: Cli) -> None:
    version = subprocess.run(
        [sys.executable, "-m", "rtrain", "--version"], capture_output=True, text=True, env=cli.env
    )
    assert (version.returncode, version.stdout) == (0, cli("--version").out), version
    usage = subprocess.run(
        [sys.executable, "-m", "rtrain", "runs", "-h"], capture_output=True, text=True, env=cli.env
    )
    assert usage.stdout.startswith("Usage: rtrain runs [OPTIONS]"), usage


def test_filters_that_match_nothing_say_so_not_no_runs_yet(cli: Cli) -> None:
    cli.start(cli.new_run_id(), "{python}", "-c", "print('ok')")
    done = cli("runs", "--host", "plain", "--state", "stopped")
    assert (done.code, done.out) == (0, ""), done
    assert done.err == "no runs match --host plain --state stopped; `rtrain runs` lists them all\n"
    elsewhere = cli("runs", "--host", "elsewhere")
    assert elsewhere.err.startswith("no runs match --host elsewhere;"), elsewhere


def test_an_unknown_state_is_a_usage_error_listing_the_states(cli: Cli) -> None:
    done = cli("runs", "--state", "bogus")
    assert (done.code, done.out) == (2, ""), done
    assert done.err_lines[-1] == (
        "Error: Invalid value for '--state': 'bogus' is not one of 'queued', 'running', "
        "'completed', 'failed', 'stopped', 'lost', 'unknown'."
    ), done
    assert "Invalid params" not in done.err
    assert "<queued|running|completed|failed|stopped|lost|unknown>" in cli("runs", "-h").out
    assert cli.daemon.daemon_pids() == []  # refused before the daemon was asked
