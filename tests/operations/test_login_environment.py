"""A run starts in the login environment the host gives now, not in one the daemon kept.

The daemon keeps long-lived far-side shells for quick scripts; a trainer must still get what
the user's rc files set at the moment of the start (a fixed PATH, a new token, a module).
"""

from __future__ import annotations

from tests.operations.harness import Ops

PRINT_SITE = "import os; print('site=' + os.environ.get('RTRAIN_TEST_SITE', 'unset'))"


def test_a_start_sees_the_rc_files_as_they_are_now(ops: Ops) -> None:
    bashrc = ops.home / ".bashrc"
    original = bashrc.read_text()
    first, second = ops.new_run_id(), ops.new_run_id()
    try:
        ops.start(PRINT_SITE, run_id=first)
        ops.wait_state(first, lambda run: run.state == "completed")
        # Before the interactive guard, as a user would export a variable for every login.
        bashrc.write_text("export RTRAIN_TEST_SITE=changed\n" + original)
        ops.start(PRINT_SITE, run_id=second)
        ops.wait_state(second, lambda run: run.state == "completed")
    finally:
        bashrc.write_text(original)
    assert "site=unset" in (ops.far_run_dir(first) / "train.log").read_text()
    assert "site=changed" in (ops.far_run_dir(second) / "train.log").read_text()
