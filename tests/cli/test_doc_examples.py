"""Every example command of the README and docs/cli.md, run exactly as written, in order,
in a project directory, against a host called `gpubox` (the suite's real sshd).

An example is a line of a code block that starts with `rtrain ` (or `$ rtrain `), and is
not a synopsis (no `HOST`, `RUN`, `[...]` placeholders). The README's Python block runs as
written too. What the test owns is the world around them, as a user's own would be: the
ssh config with `gpubox`, the user config (a private workdir for `gpubox`), and the project
(train.py, config.yaml, data/train.jsonl). torchrun's and the Hub's examples are the
exceptions (below).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import Cli
from tests.cli.rtrain_command import COMMAND_TIMEOUT_S, rtrain_executable
from tests.hosts import GPU_USER

REPO = Path(__file__).resolve().parents[2]
SYNOPSIS = re.compile(r"\b(HOST|RUN|COMMAND|PATH|SHELL)\b|\[|\.\.\.")
# torchrun's examples need a torch built for the host's GPUs: preflight rightly calls a
# CPU-only torch on a GPU host not ready, and this machine has only the CPU build.
# tests/cli/test_torchrun.py runs the same commands with the CPU build named by --python.
NEEDS_CUDA_TORCH = "torchrun"
# preflight's --hf-model example asks the real Hugging Face Hub, which the suite cannot reach
# (and it shows a host that is not ready, exit 1); tests/operations/test_preflight_hub.py
# runs those checks against a local Hub.
NEEDS_THE_HUB = "--hf-model"

CONFIG = """\
steps: 40
learning_rate: 0.03
batch_size: 16
log_every: 10
checkpoint_every: 20
context: 3
hidden: 16
backend: torch
device: cpu
"""
# A trainer as a project has one: a module of its own, its config, a dataset, checkpoints and
# an adapter to fetch; under torchrun, rank 0 writes.
TRAIN_PY = """\
import argparse, json, os, time
from helpers import describe

parser = argparse.ArgumentParser()
parser.add_argument("--config")
args = parser.parse_args()
rows = open("train.jsonl").read().splitlines()
if os.environ.get("RANK", "0") == "0":
    os.makedirs("lora_model", exist_ok=True)
    with open("lora_model/adapter.json", "w") as f:
        json.dump({"rows": len(rows)}, f)
for step in (10, 20):
    print(f"step {step} | loss {1.0 / step:.4f}", flush=True)
    time.sleep(0.2)
print(describe(args.config), flush=True)
"""


def examples(doc: Path) -> list[str]:
    found = []
    for block in re.findall(r"```([^\n]*)\n(.*?)```", doc.read_text(), re.DOTALL):
        if block[0].strip() == "python":
            continue
        for line in block[1].splitlines():
            command = line.removeprefix("$ ").split("  #", 1)[0].strip()
            runnable = not SYNOPSIS.search(command) and not any(
                needs in command for needs in (NEEDS_CUDA_TORCH, NEEDS_THE_HUB)
            )
            if command.startswith("rtrain ") and runnable:
                found.append(command)
    return found


def python_example(doc: Path) -> str:
    (code,) = re.findall(r"```python\n(.*?)```", doc.read_text(), re.DOTALL)
    return str(code)


@pytest.fixture
def project(cli: Cli) -> tuple[Path, dict[str, str]]:
    cli.hosts.add_alias("gpubox", cli.hosts.plain_port, GPU_USER)
    settings = cli.daemon.config / "rtrain"
    settings.mkdir(parents=True, exist_ok=True)
    # `true` as the terminate command: the train -> fetch -> terminate example runs whole.
    (settings / "config.toml").write_text(
        f'[hosts.gpubox]\nworkdir = "{cli.workdir}"\nterminate = "true"\n'
    )
    root = cli.cwd / "project"
    (root / "data").mkdir(parents=True)
    (root / "train.py").write_text(TRAIN_PY)
    (root / "helpers.py").write_text("def describe(path):\n    return 'trained with ' + path\n")
    (root / "config.yaml").write_text(CONFIG)
    (root / "data" / "train.jsonl").write_text(
        '{"prompt": "Q: up?\\nA:", "completion": " down"}\n' * 40
    )
    (root / ".gitignore").write_text("out/\n")
    env = {**cli.env, "HOME": str(cli.daemon.root / "home"), "OMP_NUM_THREADS": "1"}
    env["PATH"] = f"{Path(rtrain_executable()).parent}:{env['PATH']}"
    Path(env["HOME"]).mkdir()
    return root, env


@pytest.mark.parametrize("doc", ["README.md", "docs/cli.md"])
def test_every_example_command_runs_as_written(
    cli: Cli, project: tuple[Path, dict[str, str]], doc: str
) -> None:
    root, env = project
    commands = examples(REPO / doc)
    assert len(commands) >= 4, commands
    for command in commands:
        # As typed into a shell: bash stays the command's parent (`-c` alone would exec it),
        # which is how `--install-completion` tells which shell it is for.
        done = subprocess.run(
            ["bash", "-c", 'eval "$1"; exit $?', "example", command],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
        )
        assert done.returncode == 0, (command, done.stdout, done.stderr)
    if doc == "README.md":
        assert (root / "out" / "lora_model" / "adapter.json").is_file()
        assert not (cli.far_workdir / "first").exists(), "rm removed it"


def test_the_readme_python_example_runs_as_written(
    cli: Cli, project: tuple[Path, dict[str, str]]
) -> None:
    root, env = project
    done = subprocess.run(
        [sys.executable, "-c", python_example(REPO / "README.md")],
        cwd=root,
        env={**env, "PYTHONPATH": os.pathsep.join(sys.path)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S * 2,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "trained with config.yaml" in done.stdout and "completed" in done.stdout, done.stdout
    assert (root / "out" / "lora_model" / "adapter.json").is_file()
    assert not (cli.far_workdir / "from-python").exists()
