"""The whole life of a run on a console-only host, through a real daemon: preflight, start with
a 20 MB dataset, tail, status, a daemon (and so every console) going away, fetch of a
directory, stop. Every byte that crosses is compared."""

from __future__ import annotations

import base64
import hashlib
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from rtrain.client.daemon_client import DaemonClient
from tests.console.conftest import Far
from tests.daemon_fixtures import DaemonEnv
from tests.hosts import TestHosts

WAIT_S = 60.0
DATASET_BYTES = 20 * 1024 * 1024
SECRET = "s3cr3t-" + os.urandom(8).hex()
TRAINER = """
import hashlib, os, pathlib, sys, time
data = pathlib.Path(sys.argv[1]).read_bytes()
print("dataset", len(data), hashlib.sha256(data).hexdigest(), flush=True)
print("secret", hashlib.sha256(os.environ["RT_TEST_SECRET"].encode()).hexdigest(), flush=True)
out = pathlib.Path("out")
(out / "sub dir").mkdir(parents=True)
(out / "empty").mkdir()
(out / "weights.bin").write_bytes(data[: 6 * 1024 * 1024 + 7])
(out / "every byte").write_bytes(bytes(range(256)) * 300)
(out / "sub dir" / "notes é ✓.txt").write_text("ünïcödé\\n")
for step in range(3):
    print("step", step, flush=True)
print("ready", flush=True)
while True:
    time.sleep(0.1)
"""


def run_pids(run_id: str) -> list[int]:
    """Live processes of the run on the far host (this machine), by the run's marker."""
    marker = f"RTRAIN_RUN_ID={run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                if (entry / "stat").read_text().rsplit(") ", 1)[1][0] != "Z":
                    found.append(int(entry.name))
        except (OSError, IndexError):
            continue
    return found


def far_temp_files_holding(needles: list[bytes]) -> list[Path]:
    """Files of the far side's console agents (any test's) that contain one of `needles`."""
    found = []
    for directory in Path(tempfile.gettempdir()).glob("rtrain-console.*"):
        for path in directory.rglob("*"):
            try:
                content = path.read_bytes() if path.is_file() else b""
            except OSError:
                continue
            if any(needle in content for needle in needles):
                found.append(path)
    return found


def wait_until(check: Any, what: str) -> Any:
    deadline = time.monotonic() + WAIT_S
    while not (result := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return result


@pytest.mark.slow
def test_a_run_lives_its_whole_life_on_a_console_only_host(
    daemon_env: DaemonEnv,
    ssh_hosts: TestHosts,
    far: Far,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("RTRAIN_SSH_CONFIG", str(ssh_hosts.config_path))
    client = DaemonClient.connect(name="console-tests", timeout=120)
    run_id = f"life-{os.getpid()}"
    dataset = tmp_path / "data set ✓.bin"
    data = os.urandom(DATASET_BYTES)
    dataset.write_bytes(data)
    config = tmp_path / "config.yaml"
    config.write_text("steps: 3\n")
    try:
        preflight = client.request(
            "host/preflight",
            {"host": "console", "gpus": 1, "python": "python3", "workdir": far.tilde},
        )
        assert preflight.ok, preflight.reasons
        assert preflight.transport == "console"
        assert len(preflight.gpus) >= 1
        [host] = [h for h in client.request("hosts/list").hosts if h.alias == "console"]
        assert host.transport == "console" and host.connection == "connected"

        progress: list[Any] = []
        started = client.request(
            "run/start",
            {
                "host": "console",
                "runId": run_id,
                "workdir": far.tilde,
                "gpus": 0,
                "python": "python3",
                "config": str(config),
                "dataset": str(dataset),
                "command": ["{python}", "-c", TRAINER, "{dataset}"],
                "secrets": {"RT_TEST_SECRET": SECRET},
                "progressToken": "ship",
            },
            on_notification=lambda method, params: (
                progress.append(params.value) if method == "$/progress" else None
            ),
        )
        run_dir = far.path / run_id
        assert started.run.state == "running"
        assert started.uploaded_bytes == DATASET_BYTES + len("steps: 3\n")
        assert (run_dir / dataset.name).read_bytes() == data
        assert (run_dir / "config.yaml").read_text() == "steps: 3\n"
        assert not list(run_dir.glob("*.part"))
        assert [p.kind for p in progress][0] == "begin" and progress[-1].kind == "end"
        done = [p.done_bytes for p in progress if p.kind == "report"]
        assert len(done) > 2 and done == sorted(done) and done[-1] == started.uploaded_bytes

        wait_until(
            lambda: (
                b"ready" in (run_dir / "train.log").read_bytes()
                if (run_dir / "train.log").exists()
                else False
            ),
            "the trainer to get ready",
        )
        chunks: list[Any] = []
        tailed = client.request(
            "run/tail",
            {"host": "console", "runId": run_id, "follow": False},
            on_notification=lambda method, params: (
                chunks.append(params) if method == "run/log" else None
            ),
        )
        text = "".join(chunk.text for chunk in chunks)
        assert f"dataset {DATASET_BYTES} {hashlib.sha256(data).hexdigest()}\n" in text
        assert "step 2\nready\n" in text
        # The secret reached the trainer, and no file of the console's far side.
        assert f"secret {hashlib.sha256(SECRET.encode()).hexdigest()}\n" in text
        assert far_temp_files_holding([SECRET.encode(), base64.b64encode(SECRET.encode())]) == []
        assert tailed.offset == len(text.encode())
        status = client.request("run/status", {"host": "console", "runId": run_id})
        assert status.run.state == "running"

        # The daemon goes, and every console with it; the detached run stays.
        pids = run_pids(run_id)
        assert pids
        client.request("daemon/stop")
        client.close()
        wait_until(lambda: not daemon_env.daemon_pids(), "the daemon to stop")
        assert all(pid in run_pids(run_id) for pid in pids)

        client = DaemonClient.connect(name="console-tests", timeout=120)
        status = client.request("run/status", {"host": "console", "runId": run_id})
        assert status.run.state == "running"
        dest = tmp_path / "fetched"
        fetched = client.request(
            "run/fetch",
            {"host": "console", "runId": run_id, "path": "out", "dest": str(dest)},
        )
        far_files = {
            str(path.relative_to(run_dir)): path.read_bytes()
            for path in (run_dir / "out").rglob("*")
            if path.is_file()
        }
        assert {f.remote_path for f in fetched.files} == set(far_files)
        assert all(f.verified for f in fetched.files)
        for remote, content in far_files.items():
            assert (dest / remote).read_bytes() == content
        assert (dest / "out" / "empty").is_dir()
        assert fetched.total_bytes == sum(len(c) for c in far_files.values())

        stopped = client.request("run/stop", {"host": "console", "runId": run_id, "grace": 5})
        assert stopped.outcome == "stopped"
        assert stopped.run.state == "stopped"
        assert run_pids(run_id) == []
    finally:
        client.close()
        for pid in run_pids(run_id):
            os.kill(pid, signal.SIGKILL)
