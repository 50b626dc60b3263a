"""Steps the real trainers' tests share: ship a project, wait for its run to end, read what
rtrain says of it and what the trainer itself wrote beside the log."""

from __future__ import annotations

import json
import math
import shutil
import time
from pathlib import Path
from typing import Any

from tests.cli.conftest import Cli

PROJECTS = Path(__file__).parent.parent / "projects"
# A real trainer imports for seconds and trains for seconds more on a busy CPU.
RUN_S = 300.0
# What rtrain reads is the number as the trainer printed it: transformers to 4 significant
# digits, Lightning's bar to 3.
PRINTED = 5e-3


def start(cli: Cli, run_id: str, project: str, python: str, *command: str) -> None:
    """`rtrain start plain --code PROJECT --python PYTHON -- COMMAND`, not followed."""
    shutil.copytree(PROJECTS / project, cli.cwd / project)
    done = cli(
        "start", "plain", "--code", project, "--run-id", run_id, "--workdir", cli.workdir,
        "--gpus", "0", "--python", python, "-e", "HF_HUB_OFFLINE=1", "--no-follow",
        "--", *command,
    )  # fmt: skip
    assert done.code == 0, done


def ended(cli: Cli, run_id: str) -> str:
    """The run's state once it is no longer running (polled until then)."""
    deadline = time.monotonic() + RUN_S
    while True:
        state = cli("status", "plain", run_id).out.strip()
        if state and not state.startswith(("running", "queued", "unknown")):
            return state
        assert time.monotonic() < deadline, f"{run_id} still {state!r} after {RUN_S} s"
        time.sleep(0.5)


def completed(cli: Cli, run_id: str) -> None:
    state = ended(cli, run_id)
    log = (cli.far_run_dir(run_id) / "train.log").read_text(errors="replace")
    assert state == "completed", f"{run_id} ended {state!r}; its log:\n{log[-4000:]}"


def far_json(cli: Cli, run_id: str, name: str) -> Any:
    """A JSON file the trainer wrote in its run dir, read as root on this machine."""
    return json.loads((cli.far_run_dir(run_id) / name).read_text())


def series(cli: Cli, run_id: str, name: str) -> dict[int, float]:
    """One series of `rtrain metrics --json`, step -> value."""
    done = cli("metrics", "plain", run_id, "--json")
    assert done.code == 0, done
    return {row["step"]: row[name] for row in done.json() if name in row}


def assert_same_series(read: dict[int, float], recorded: dict[int, float]) -> None:
    """rtrain's series has the trainer's steps, each value as the trainer printed it."""
    assert sorted(read) == sorted(recorded), (
        f"steps differ: rtrain read {sorted(read)}, the trainer recorded {sorted(recorded)}"
    )
    far = {
        step: (read[step], recorded[step])
        for step in recorded
        if not math.isclose(read[step], recorded[step], rel_tol=PRINTED)
    }
    assert not far, f"(rtrain, trainer) differ beyond print rounding at steps: {far}"
