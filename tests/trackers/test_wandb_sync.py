"""`rtrain start --sync wandb`: a real W&B trainer on the plain host writes an offline run in
the run dir (the wandb package, no server); the daemon brings it home while the run trains
and at its end and sends it with `wandb sync` to this machine's W&B: here a recording
endpoint (tests/trackers/wandb_endpoint.py), since W&B's own server cannot run here."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import WAIT_S, Cli
from tests.trackers.test_mlflow_sync import python_without
from tests.trackers.wandb_endpoint import Endpoint, StoredRun, wandb_endpoint

# No mode: rtrain's run environment makes it offline. A flush every second (W&B's default is
# 15 s) lets the first half reach the file while the trainer waits. A file saved as a link
# out of the run dir stays on the host without stopping the sync.
TRAINER = """
import os, time, wandb
run = wandb.init(project="rtrain-sync", config={"lr": 0.1})
os.symlink("/etc/hostname", os.path.join(run.dir, "saved-from-outside.txt"))  # as wandb.save
for step in range(3):
    wandb.log({"loss": 1.0 / (step + 1)})
print("first half", flush=True)
while not os.path.exists("finish"):
    time.sleep(0.05)
for step in range(3, 6):
    wandb.log({"loss": 1.0 / (step + 1)})
run.finish()
print("done", flush=True)
"""
LOSSES = [1.0 / (step + 1) for step in range(6)]


@pytest.fixture
def endpoint(cli: Cli, tmp_path: Path) -> Iterator[Endpoint]:
    """This machine's W&B, as the daemon's wandb finds it: its URL, and its key in a netrc
    file as `wandb login` writes one (a key in the shell's environment never reaches the
    daemon)."""
    with wandb_endpoint() as served:
        netrc = tmp_path / "netrc"
        netrc.write_text(
            f"machine {served.url.split('//')[1]}\n  login user\n  password {'k' * 40}\n"
        )
        netrc.chmod(0o600)
        for name, value in (
            ("WANDB_BASE_URL", served.url),
            ("NETRC", str(netrc)),
            ("RTRAIN_SYNC_INTERVAL", "1"),
        ):
            cli.env[name] = value
        yield served


def synced_run(
    endpoint: Endpoint, rows: int, why: Callable[[], object], complete: bool = False
) -> StoredRun:
    """The one run the endpoint holds, once it has `rows` history rows (and its end)."""
    deadline = time.monotonic() + 3 * WAIT_S  # W&B's own start and sync take seconds each
    while True:
        with endpoint.lock:
            runs = list(endpoint.runs.values())
            if runs and len(runs[0].history) >= rows and (runs[0].complete or not complete):
                assert len(runs) == 1, endpoint.runs
                return runs[0]
        assert time.monotonic() < deadline, f"{rows} rows never came: {endpoint.runs}, {why()}"
        time.sleep(0.2)


def test_a_wandb_offline_run_is_synced_while_it_trains_and_at_the_end_each_row_once(
    cli: Cli, trackers_python: str, endpoint: Endpoint
) -> None:
    run_id = cli.new_run_id("wb")
    cli.start(
        run_id, "{python}", "-c", TRAINER, python=trackers_python, sync="wandb",
        env="WANDB__TRANSACTION_LOG_FLUSH_INTERVAL=1",
    )  # fmt: skip
    cli.wait_far_log(run_id, "first half")
    offline = list((cli.far_run_dir(run_id) / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(offline) == 1, offline  # written offline, as the run's environment says

    def sync_state() -> object:
        return cli("status", "plain", run_id, "--json").json()["synced"]

    # While it trains: the first half, with the run's config. (`wandb sync` ends each upload
    # as finished; the next one resumes the run: docs/trackers.md.)
    stored = synced_run(endpoint, 3, sync_state)
    with endpoint.lock:
        assert [row["loss"] for row in stored.rows()] == LOSSES[:3]
        assert '"lr"' in stored.config
    deadline = time.monotonic() + WAIT_S
    while not (sync := cli("status", "plain", run_id, "--json").json()["synced"][0]).get(
        "syncedAt"
    ):
        assert time.monotonic() < deadline, f"no sync was recorded: {sync}"
        time.sleep(0.2)
    assert sync["tracker"] == "wandb", sync
    said = cli("status", "plain", run_id)
    assert said.err_lines[-1].startswith("wandb: synced "), said

    # At its end: the rest after the first half, each row sent once over all the syncs.
    cli.finish(run_id)
    cli.wait_state("plain", run_id, "completed")
    deadline = time.monotonic() + 3 * WAIT_S  # the last sync, made once the run has ended
    while not (sync := cli("status", "plain", run_id, "--json").json()["synced"][0]).get("done"):
        assert time.monotonic() < deadline, f"the last sync was never made: {sync}"
        time.sleep(0.2)
    assert sync.get("error") is None, sync
    said = cli("status", "plain", run_id)
    assert said.err_lines[-1].endswith("; the last one, the run has ended"), said
    stored = synced_run(endpoint, 6, sync_state, complete=True)
    with endpoint.lock:
        rows = stored.rows()
        assert [row["loss"] for row in rows] == LOSSES
        assert [row["_step"] for row in rows] == list(range(6))
        assert stored.received == 6, stored.received
        requests = endpoint.requests

    # A sync again, of the same copy and state: nothing new, nothing sent.
    mirror = Path(cli.env["XDG_STATE_HOME"]) / "rtrain" / "sync" / "plain" / run_id
    again = subprocess.run(
        [sys.executable, "-m", "rtrain.daemon.trackers.wandb_import", str(mirror / "wandb"),
         str(mirror / "wandb-import-state.json"), f"plain:{run_id}"],
        env={**os.environ, **cli.env}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert (again.returncode, again.stdout) == (0, "nothing new\n"), again
    assert endpoint.requests == requests


def test_wandb_missing_here_is_one_sentence_and_starts_nothing(cli: Cli, tmp_path: Path) -> None:
    python = python_without(tmp_path, "wandb")
    env = {**cli.env, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    run_id = cli.new_run_id("nowb")
    done = subprocess.run(
        [str(python), "-m", "rtrain", "start", "plain", "--run-id", run_id, "--gpus", "0",
         "--workdir", cli.workdir, "--sync", "wandb", "--no-follow", "--", "python3", "-V"],
        env=env, cwd=cli.cwd, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done
    assert done.stderr.splitlines() == [
        f"rtrain: --sync wandb imports into this machine's wandb, which is not installed for "
        f"{python}: pip install wandb (nothing was started)."
    ], done
    assert not cli.far_run_dir(run_id).exists()
