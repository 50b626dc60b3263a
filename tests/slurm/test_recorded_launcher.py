"""A run keeps the launcher it was started with (the fault: config.toml's `scheduler` was read
again on every call, so after adding it `status` and `stop` of a running process run said
"no run" while the trainer went on, and after removing it a live Slurm job read `lost`)."""

from __future__ import annotations

from tests.cli.conftest import WAITING_TRAINER, Cli
from tests.slurm.test_slurm_runs import WAITS, ClusterCli, cluster  # noqa: F401 (a fixture)


def config_toml(cli: Cli, text: str) -> None:
    (cli.daemon.config / "rtrain" / "config.toml").write_text(text)
    assert cli("daemon", "stop").code == 0  # the next command starts a daemon that reads it


def test_a_process_run_stays_one_after_the_host_becomes_a_slurm_host(
    cluster: ClusterCli,  # noqa: F811 (the fixture, imported above)
) -> None:
    cli = cluster.cli
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", WAITING_TRAINER)
    cli.wait_far_log(run_id, "step 1")
    config_toml(cli, '[hosts.plain]\nscheduler = "slurm"\npartition = "gpu"\n')

    assert cli("status", "plain", run_id).out == "running\n"
    assert "step 1 | loss 1.0" in cli("tail", "plain", run_id, "--no-follow").out
    stopped = cli("stop", "plain", run_id, "--json")
    assert stopped.code == 0 and stopped.json()["outcome"] == "stopped", stopped
    # Its next attempt is a process on the host again, not a batch job.
    again = cli("restart", "plain", run_id, "--no-follow", "--json")
    assert again.code == 0, again
    assert again.json()["run"]["launcher"] == "process" and again.json()["pid"], again
    cli.finish(run_id)
    cli.wait_state("plain", run_id, "completed")
    fetched = cli("fetch", "plain", run_id, "train.log", "-o", str(cli.cwd / "out"))
    assert fetched.code == 0, fetched


def test_a_slurm_job_stays_one_after_the_scheduler_leaves_the_config(
    cluster: ClusterCli,  # noqa: F811
) -> None:
    cli = cluster.cli
    run_id = cli.new_run_id()
    cluster.start(run_id, WAITS, "--gpus", "1")
    cluster.wait_status(run_id, "running")
    config_toml(cli, "")

    listed = {run["runId"]: run for run in cli("runs", "--json").json()}
    assert listed[run_id]["launcher"] == "slurm"
    assert cluster.status(run_id).out == "running\n"
    stopped = cli("stop", "cluster", run_id, "--json")
    assert stopped.code == 0 and stopped.json()["outcome"] == "stopped", stopped
    job = cluster.job_id(run_id)
    queue = cluster.slurm.as_user("squeue", "-h", "-t", "all", "-j", job, "-o", "%T")
    assert queue.strip() in ("", "CANCELLED", "FAILED", "COMPLETED"), queue
