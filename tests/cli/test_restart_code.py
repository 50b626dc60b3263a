"""`rtrain restart --code DIR`: the fix shipped into the run directory (only what changed),
and the run resumed from its checkpoint; a restart without --code says when the code here
is not what the run holds."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Cli

# Checkpoints each step into its run dir; resumes from there; fails from step 3 on while the
# bug is in (settings.py).
TRAINER = """\
import json, os
from settings import BUG
start = 0
if os.path.exists("ckpt.json"):
    with open("ckpt.json") as f:
        start = json.load(f)["step"]
    print(f"resumed from step {start}", flush=True)
for step in range(start + 1, 6):
    with open("ckpt.json", "w") as f:
        json.dump({"step": step}, f)
    print(f"step {step} | loss {1 / step:.3f}", flush=True)
    if step >= 3 and BUG:
        raise RuntimeError(f"bug at step {step}")
print("done", flush=True)
"""


def _code(cli: Cli, bug: bool) -> Path:
    code = cli.cwd / "project"
    code.mkdir(exist_ok=True)
    (code / "train.py").write_text(TRAINER)
    (code / "settings.py").write_text(f"BUG = {bug}\n")
    return code


def test_restart_with_code_ships_the_changed_file_and_resumes(cli: Cli) -> None:
    code = _code(cli, bug=True)
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "train.py", code=str(code))
    cli.wait_state("plain", run_id, "failed (exit 1, RuntimeError: bug at step 3)")

    _code(cli, bug=False)  # the fix: settings.py only
    restarted = cli(
        "restart", "plain", run_id, "--code", str(code), "--workdir", cli.workdir
    )  # it follows the new attempt to its end
    assert restarted.code == 0, restarted
    assert restarted.out_lines[0] == f"shipped from {code}: settings.py", restarted
    assert "resumed from step 3" in restarted.out_lines
    assert "step 4 | loss 0.250" in restarted.out_lines
    assert restarted.out_lines[-1] == "done"
    assert "step 1 | loss" not in restarted.out
    assert cli("status", "plain", run_id).out == "completed\n"
    far = cli.far_run_dir(run_id)
    assert (far / "settings.py").read_text() == "BUG = False\n"
    assert (far / "train.py").read_text() == TRAINER

    # Nothing changed since: nothing is shipped.
    again = cli("restart", "plain", run_id, "--code", str(code), "--workdir", cli.workdir)
    assert again.code == 0, again
    assert again.out_lines[0] == f"shipped from {code}: nothing changed"


def test_restart_without_code_says_the_code_here_differs(cli: Cli) -> None:
    code = _code(cli, bug=True)
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "train.py", code=str(code))
    cli.wait_state("plain", run_id, "failed (exit 1, RuntimeError: bug at step 3)")
    _code(cli, bug=False)

    restarted = cli("restart", "plain", run_id, "--no-follow", "--workdir", cli.workdir)
    assert restarted.code == 0, restarted
    assert restarted.err_lines[0] == (
        "note: the run holds older code than you have here (settings.py); "
        "restart --code DIR ships it"
    ), restarted
    # It ran what the run holds: the bug again, at the step after its checkpoint.
    cli.wait_state("plain", run_id, "failed (exit 1, RuntimeError: bug at step 4)")
    assert (cli.far_run_dir(run_id) / "settings.py").read_text() == "BUG = True\n"
