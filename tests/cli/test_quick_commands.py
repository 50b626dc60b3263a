"""`rtrain status` and `rtrain tail` in their plain forms skip typer, and the client they use
(the one client, DaemonClient) never loads msgspec. A user must not be able to tell: the
same stdout, stderr and exit status as the typer commands, for answers, refusals and Ctrl-C.

Every run lives on the embedded host `local`, so no ssh is involved.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rtrain.client.daemon_client import DaemonClient
from tests.cli.leftovers import kill_marked
from tests.cli.rtrain_command import COMMAND_TIMEOUT_S, rtrain_executable
from tests.daemon_fixtures import DaemonEnv

# The typer command, whatever the entry point's fast path would do with the same words.
TYPER = "import sys; from rtrain.client.cli.app import run; sys.argv[0] = 'rtrain'; run()"
# Runs the console script's entry with the given words, then names the heavy modules it loaded.
PROBE = (
    "import json, sys\n"
    "from rtrain.client.entry import main\n"
    "sys.argv = ['rtrain', *sys.argv[1:]]\n"
    "try:\n    main()\nexcept SystemExit:\n    pass\n"
    "heavy = ('typer', 'click', 'msgspec', 'dataclasses', 'rtrain.protocol.connection', "
    "'rtrain.protocol.messages')\n"
    "print(json.dumps(sorted(m for m in heavy if m in sys.modules)), file=sys.stderr)\n"
)
LIGHT: list[str] = []
# Starting a daemon loads a little more (the spawner), never msgspec.
STARTING = ["dataclasses"]

TEXT = 'step 1 | loss 1.0\né ü "quoted" \\ back\tslash\n'


@dataclass
class Said:
    code: int
    out: str
    err: str


def fast(*args: str) -> Said:
    return _run([rtrain_executable(), *args])


def typer_way(*args: str) -> Said:
    return _run([sys.executable, "-c", TYPER, *args])


def _run(argv: list[str]) -> Said:
    done = subprocess.run(
        argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=COMMAND_TIMEOUT_S
    )
    return Said(done.returncode, done.stdout, done.stderr)


def loaded(*args: str, **env: str) -> list[str]:
    """The heavy modules `rtrain ARGS` loads."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=COMMAND_TIMEOUT_S,
    )
    names: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return names


@dataclass
class Runs:
    completed: str
    failed: str
    running: str


@pytest.fixture
def runs(daemon_env: DaemonEnv, tmp_path: Path) -> Iterator[Runs]:
    """Three runs on `local`: one completed, one failed (exit 3), one still running."""
    tag = uuid.uuid4().hex[:8]
    found = Runs(f"done-{tag}", f"failed-{tag}", f"running-{tag}")
    config = tmp_path / "config.yaml"
    config.write_text("steps: 1\n")
    workdir = tmp_path / "w"
    commands = {
        found.completed: ["sh", "-c", 'printf "%s" "$0"', TEXT],
        found.failed: ["sh", "-c", "echo step 1; echo nope >&2; exit 3"],
        found.running: ["sh", "-c", "echo started; exec sleep 600"],
    }
    try:
        with DaemonClient.connect() as client:
            for run_id, command in commands.items():
                client.request(
                    "run/start",
                    {
                        "host": "local",
                        "config": str(config),
                        "runId": run_id,
                        "workdir": str(workdir),
                        "command": command,
                        "gpus": 0,
                    },
                )
            deadline = time.monotonic() + 30
            for run_id in (found.completed, found.failed):
                while client.request("run/status", {"host": "local", "runId": run_id}).run.state \
                        == "running":  # fmt: skip
                    assert time.monotonic() < deadline, f"{run_id} never ended"
                    time.sleep(0.05)
            log = workdir / found.running / "train.log"
            while not (log.exists() and log.read_text() == "started\n"):
                assert time.monotonic() < deadline, "the running run never printed"
                time.sleep(0.05)
        yield found
    finally:
        kill_marked(tag)


@pytest.mark.slow
def test_status_and_tail_say_what_the_typer_commands_say(runs: Runs) -> None:
    cases = [
        ["status", "local", runs.completed],
        ["status", "local", runs.failed, "--json"],
        ["status", "local", runs.completed, "-j"],
        ["status", "local", runs.running],  # not as JSON: a running run's lastSeen moves
        ["tail", "local", runs.completed],
        ["tail", "local", runs.failed, "--json"],
        ["tail", "local", runs.running, "--no-follow"],
        ["tail", "--json", "local", runs.completed, "--no-follow"],
    ]
    said = []
    for args in cases:
        said.append(fast(*args))
        assert said[-1] == typer_way(*args), args
    status, status_json, completed_json, running, tail, tail_json, running_tail, log_json = said
    assert (status.code, status.out) == (0, "completed\n")
    assert json.loads(status_json.out)["exitCode"] == 3
    assert json.loads(completed_json.out)["state"] == "completed"
    assert running.out == "running\n"
    assert (tail.code, tail.out, tail.err) == (0, TEXT, f"{runs.completed} on local: completed\n")
    end = json.loads(tail_json.out.splitlines()[-1])
    assert (tail_json.code, end["type"], end["run"]["exitCode"]) == (1, "end", 3)
    assert (running_tail.code, running_tail.out) == (0, "started\n")
    first = log_json.out.splitlines()[0]
    assert json.loads(first)["text"] == TEXT
    assert '"step 1 | loss 1.0\\né ü' in first  # UTF-8, not \u escapes, as msgspec writes


@pytest.mark.slow
def test_refusals_say_what_the_typer_commands_say(daemon_env: DaemonEnv) -> None:
    daemon_env.client().close()  # a warm daemon, so the quick client is the one refusing
    cases = [
        (["status", "local", "no-such-run"], 1),
        (["tail", "local", "no-such-run", "--json"], 1),
        (["status", "local", "x;touch p"], 2),
        (["tail", "bad host", "r"], 2),
        (["tail", "-oProxyCommand=x", "r"], 2),
    ]
    for args, code in cases:
        quick = fast(*args)
        assert quick == typer_way(*args), args
        assert quick.code == code, quick
        assert quick.out == ""
    assert fast("status", "local", "no-such-run").err.startswith("rtrain: no run no-such-run ")


def test_ctrl_c_while_following_detaches_as_the_typer_command_does(runs: Runs) -> None:
    said = []
    for argv in ([rtrain_executable()], [sys.executable, "-c", TYPER]):
        process = subprocess.Popen(
            [*argv, "tail", "local", runs.running],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            assert process.stdout.readline() == "started\n"
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=COMMAND_TIMEOUT_S)
        finally:
            process.kill()
            process.wait()
        said.append(Said(process.returncode, out, err))
    assert said[0] == said[1]
    assert said[0].code == 130
    assert said[0].err.startswith(f"\ndetached; {runs.running} keeps running on local.\n")


@pytest.mark.slow
def test_neither_typer_nor_msgspec_is_loaded(runs: Runs) -> None:
    assert loaded("status", "local", runs.completed) == LIGHT
    assert loaded("status", "local", runs.failed, "--json") == LIGHT
    assert loaded("tail", "local", runs.completed, "-j", "--no-follow") == LIGHT
    assert loaded("tail", "local", runs.completed, "--follow") == LIGHT
    assert loaded("status", "local", "bad;id") == LIGHT
    assert "typer" in loaded("status", "--help")
    assert "typer" in loaded("tail", "local", runs.completed, "--offset", "3")
    assert "typer" in loaded("tail", "local", runs.completed, "--", "x")


def test_without_a_daemon_the_client_starts_one_still_without_msgspec(
    daemon_env: DaemonEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not daemon_env.socket.exists()
    assert loaded("status", "local", "no-such-run") == STARTING
    assert daemon_env.daemon_pids(), "the fast path did not start a daemon"
    # and with auto-start off, the client's refusal, still without typer
    for pid in daemon_env.daemon_pids():
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while daemon_env.daemon_pids():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    monkeypatch.setenv("RTRAIN_NO_SPAWN", "1")
    quick = fast("tail", "local", "r")
    assert quick == typer_way("tail", "local", "r")
    assert (quick.code, quick.err.split(";")[0]) == (1, "rtrain: No rtrain daemon is running")
    assert loaded("tail", "local", "r") == STARTING
