"""`rtrain status HOST RUN` skips typer for start-up speed; it must say exactly what the
typer command says, and fall back to typer for every other form."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rtrain.client.daemon_client import DaemonClient
from tests.daemon_fixtures import DaemonEnv

TYPER_PATH = "import sys; from rtrain.client.cli.app import run; sys.argv[0] = 'rtrain'; run()"
PROBE = (
    "import sys; from rtrain.client.entry import main; sys.argv = ['rtrain', *sys.argv[1:]]\n"
    "try:\n    main()\nexcept SystemExit:\n    pass\n"
    "print('typer loaded' if 'typer' in sys.modules else 'typer not loaded', file=sys.stderr)"
)


def both_ways(*args: str) -> tuple[subprocess.CompletedProcess[str], ...]:
    env = os.environ.copy()
    fast = subprocess.run(["rtrain", *args], capture_output=True, text=True, env=env, timeout=60)
    slow = subprocess.run(
        [sys.executable, "-c", TYPER_PATH, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    return fast, slow


@pytest.fixture
def finished_run(daemon_env: DaemonEnv, tmp_path: Path) -> str:
    config = tmp_path / "config.yaml"
    config.write_text("steps: 1\n")
    with DaemonClient.connect() as client:
        client.request(
            "run/start",
            {
                "host": "local",
                "config": str(config),
                "runId": "fast-1",
                "workdir": str(tmp_path / "w"),
                "command": ["sh", "-c", "exit 3"],
            },
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            run = client.request("run/status", {"host": "local", "runId": "fast-1"}).run
            if run.state != "running":
                break
            time.sleep(0.1)
    return "fast-1"


def test_the_fast_path_says_what_typer_says(finished_run: str) -> None:
    for extra in ([], ["--json"], ["-j"]):
        fast, slow = both_ways("status", "local", finished_run, *extra)
        assert (fast.returncode, fast.stdout, fast.stderr) == (
            slow.returncode,
            slow.stdout,
            slow.stderr,
        )
    assert fast.returncode == 0
    assert json.loads(fast.stdout)["state"] == "failed"
    plain, _ = both_ways("status", "local", finished_run)
    assert plain.stdout == "failed (exit 3)\n"


@pytest.mark.parametrize(
    "args,code",
    [
        (["status", "local", "x;touch /tmp/p"], 2),
        (["status", "-oProxyCommand=x", "r"], 2),
        (["status", "local", "no-such-run"], 1),
    ],
)
def test_refusals_match_too(daemon_env: DaemonEnv, args: list[str], code: int) -> None:
    fast, slow = both_ways(*args)
    assert fast.returncode == slow.returncode == code
    assert fast.stderr == slow.stderr
    assert fast.stderr.startswith(("rtrain: ", "Usage: "))


@pytest.mark.parametrize(
    "args,typer_loaded",
    [
        (["status", "local", "r"], False),
        (["status", "local", "r", "--json"], False),
        (["status", "--help"], True),
        (["status", "local", "r", "--workdir", "~/w"], True),
    ],
)
def test_only_the_plain_forms_skip_typer(
    daemon_env: DaemonEnv, args: list[str], typer_loaded: bool
) -> None:
    env = {**os.environ, "RTRAIN_NO_SPAWN": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.stderr.strip().splitlines()[-1] == (
        "typer loaded" if typer_loaded else "typer not loaded"
    )
