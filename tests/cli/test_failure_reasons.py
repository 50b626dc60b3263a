"""Why a run failed, for every launcher, as `start` (following), `status`, `status --json`
and `runs` print it: here a plain run over the suite's real sshd (torchrun's ranks are in
test_torchrun.py, the far side's rules in tests/remote/test_failure_reasons.py)."""

from __future__ import annotations

from tests.cli.conftest import Cli

RAISES = """
import sys
print("step 1 | loss 2.0", flush=True)
def load(path):
    raise FileNotFoundError(f"[Errno 2] No such file or directory: {path!r}")
load("data/shakespeare_char/train.bin")
"""


def test_a_plain_run_says_its_last_exception_line_everywhere(cli: Cli) -> None:
    run_id = cli.new_run_id("why")
    cli.file("cfg.yaml", "epochs: 1\n")
    done = cli(
        "start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cli.workdir,
        "--gpus", "0", "--", "{python}", "-c", RAISES,
    )  # fmt: skip
    why = (
        "FileNotFoundError: [Errno 2] No such file or directory: 'data/shakespeare_char/train.bin'"
    )
    expected = f"failed (exit 1, {why})"
    assert done.code == 1, done
    assert done.err_lines[-1] == f"{run_id} on plain: {expected}", done
    assert cli("status", "plain", run_id).out == f"{expected}\n"
    assert cli("status", "plain", run_id, "--json").json()["reason"] == why
    # The table keeps its STATE column short (docs/cli.md): the reason's start, cut with an
    # ellipsis; `--json` and `status` hold it whole.
    runs = cli("runs", "--host", "plain")
    assert f"failed (exit 1, {why[:40]}" in runs.out, runs
    [row] = [r for r in cli("runs", "--host", "plain", "--json").json() if r["runId"] == run_id]
    assert row["reason"] == why


def test_a_plain_run_killed_by_sigkill_says_so(cli: Cli) -> None:
    run_id = cli.new_run_id("killed")
    cli.start(run_id, "{python}", "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    cli.wait_state("plain", run_id, "failed (exit 137, killed by SIGKILL)")
