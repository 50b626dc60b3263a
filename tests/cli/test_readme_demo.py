"""The README's demo command, pasted into a shell in a copy of the examples, just works."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from tests.cli.conftest import Cli
from tests.cli.rtrain_command import COMMAND_TIMEOUT_S, rtrain_executable

REPO = Path(__file__).resolve().parents[2]

# What the demo command is, until the README's first code block opens with one.
EQUIVALENT = (
    "rtrain start local -c examples/config.yaml -d examples/dataset.jsonl --run-id demo-1 "
    "&& rtrain fetch local demo-1 lora_model -o out"
)


def readme_demo_command() -> str:
    """The first line of the README's first code block, when it is an `rtrain start local`.

    Its `pip install .` step is left out: the suite runs against the rtrain already installed
    (editable), which a plain install from a temp copy would replace.
    """
    block = re.search(r"```[^\n]*\n(.*?)```", (REPO / "README.md").read_text(), re.DOTALL)
    first = block.group(1).splitlines()[0] if block else ""
    if "rtrain start local" not in first:
        return EQUIVALENT
    return re.sub(r"\bpip install \.\s*&&\s*", "", first)


def test_readme_demo_command_trains_and_fetches(cli: Cli) -> None:
    shutil.copytree(REPO / "examples", cli.cwd / "examples")
    home = cli.daemon.root / "home"
    home.mkdir()
    # The demo uses a fixed run id: a private HOME (and the daemon's own state directory,
    # where `local` keeps its runs) keeps every test run's `local` host fresh, as on a new
    # laptop.
    env = {**cli.env, "HOME": str(home)}
    # torch's thread pool fighting over a small, busy CI machine makes this tiny model take
    # 4x longer; one thread keeps the test quick and changes nothing the test looks at.
    env["OMP_NUM_THREADS"] = "1"
    env["PATH"] = f"{Path(rtrain_executable()).parent}:{env['PATH']}"
    done = subprocess.run(
        ["bash", "-c", readme_demo_command()],
        cwd=cli.cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "\ndone: 300 steps, final loss" in done.stdout, done.stdout
    assert done.stdout.startswith("✓ started demo")
    (weights,) = cli.cwd.rglob("lora_model/adapter_model.json")
    local_runs = Path(env.get("XDG_STATE_HOME", home / ".local" / "state")) / "rtrain" / "local"
    (remote,) = local_runs.glob("*/lora_model/adapter_model.json")
    assert weights.read_bytes() == remote.read_bytes()
    assert "sha256 ok" in done.stdout
