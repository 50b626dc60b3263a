"""The embedded host `local` keeps its runs and its input cache in the state directory
(`$XDG_STATE_HOME/rtrain/local`), not in the account's `~/.rtrain`: a fresh state (a test's
isolated one) has none of the account's runs, and finds none of its files already there."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Cli


def test_local_runs_and_cache_live_where_the_state_directory_says(cli: Cli) -> None:
    cli.file("cfg.yaml", "lr: 0.25\nsteps: 3\n")
    run_id = cli.new_run_id("local")
    done = cli(
        "start", "local", "-c", "cfg.yaml", "--run-id", run_id, "--no-follow", "--",
        "{python}", "-c", "print('step 1 | loss 1.0')",
    )  # fmt: skip
    assert done.code == 0, done
    assert "already on local" not in done.err, done
    cli.wait_state("local", run_id, "completed")
    workdir = cli.daemon.state / "rtrain" / "local"
    status = cli("status", "local", run_id, "--json").json()
    assert status["remoteDir"] == str(workdir / run_id), status
    assert "step 1 | loss 1.0" in (workdir / run_id / "train.log").read_text()
    assert not (Path.home() / ".rtrain" / run_id).exists()
    # Its input cache is beside its runs: the config is there, by content.
    cached = [
        p for p in workdir.rglob("*") if p.is_file() and p.read_bytes() == b"lr: 0.25\nsteps: 3\n"
    ]
    assert len(cached) >= 2, cached  # the run's copy, and the cache's
