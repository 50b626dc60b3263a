"""The suite cannot hang: a command the harness waits for fails the test within the wait's
own timeout, and a signal a test sends reaches the command even when the suite itself was
started with SIGINT ignored (a background job of a shell without job control)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import Cli
from tests.cli.test_wait import waiting


def ignored_signals(pid: int) -> int:
    """The SigIgn mask of a live process, as the kernel reports it."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return int(line.split()[1], 16)
    raise AssertionError(f"no SigIgn line for {pid}")


def test_a_command_that_never_ends_fails_the_test_within_its_timeout(cli: Cli) -> None:
    run_id, wait = waiting(cli)
    with pytest.raises(AssertionError, match=r"still running after 1 s"):
        wait.finish(timeout=1)
    assert wait.process.returncode is not None  # killed, not left behind
    cli.finish(run_id)


def test_children_of_the_suite_receive_sigint() -> None:
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
    child = subprocess.Popen(["sleep", "60"])
    try:
        assert not ignored_signals(child.pid) & (1 << (signal.SIGINT - 1))
    finally:
        child.kill()
        child.wait()


def test_every_test_has_a_deadline(pytestconfig: pytest.Config) -> None:
    assert pytestconfig.pluginmanager.hasplugin("timeout"), "pytest-timeout is not installed"
    assert float(pytestconfig.getini("timeout")) > 0
