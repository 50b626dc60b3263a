"""Runs on the suite's real Slurm cluster, through the `rtrain` command, end to end.

The login node is the alias `cluster`; its config.toml entry makes it a Slurm host. Jobs run
as the login user on the one node, which has 2 fake GPUs.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.cli.conftest import Cli
from tests.cli.rtrain_command import Outcome, rtrain_executable
from tests.cli.test_torchrun import DATASET, STEP, TORCHRUN_DEMO_CONFIG
from tests.hosts.slurm_login import SlurmLogin
from tests.torch_python import far_torch_python
from tests.waiting import wait_until

WAIT_S = 60.0

QUICK = ["python3", "-c", "print('step 1 | loss 1.0')"]
FAILS = ["python3", "-c", "import sys; print('step 1 | loss 1.0'); sys.exit(3)"]
# Runs until the file `finish` appears in its run dir.
WAITS = [
    "python3",
    "-c",
    "import os, time\nprint('step 1 | loss 1.0', flush=True)\n"
    "while not os.path.exists('finish'): time.sleep(0.1)\nprint('step 2 | loss 0.5')",
]
# Checkpoints on SIGUSR2 (the time-limit warning), then goes on until killed.
CHECKPOINTS_ON_WARNING = [
    "python3",
    "-c",
    "import signal, time\n"
    "def warned(*_):\n    open('ckpt.txt', 'w').write('saved')\n"
    "    print('checkpoint saved', flush=True)\n"
    "signal.signal(signal.SIGUSR2, warned)\nprint('step 1 | loss 1.0', flush=True)\n"
    "while True: time.sleep(0.5)",
]


@dataclass
class ClusterCli:
    cli: Cli
    slurm: SlurmLogin

    @property
    def workdir(self) -> str:
        return f"~/.rtrain-slurm/{self.cli.tag}"

    def start(
        self, run_id: str, command: list[str], *options: str, config: str = "steps: 1\n"
    ) -> Outcome:
        self.cli.file("cfg.yaml", config)
        tail = ["--", *command] if command else []
        done = self.cli(
            "start", "cluster", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", self.workdir,
            "--no-follow", *options, *tail,
        )  # fmt: skip
        assert done.code == 0, done
        return done

    def status(self, run_id: str) -> Outcome:
        return self.cli("status", "cluster", run_id)

    def wait_status(self, run_id: str, wanted: str, contains: bool = False) -> str:
        deadline = time.monotonic() + WAIT_S
        while True:
            text = self.status(run_id).out.strip()
            if (wanted in text) if contains else (text == wanted):
                return text
            assert time.monotonic() < deadline, f"{run_id} never became {wanted!r}: {text!r}"
            time.sleep(0.3)

    def far_run_dir(self, run_id: str) -> str:
        return f"{self.slurm.home}/.rtrain-slurm/{self.cli.tag}/{run_id}"

    def finish(self, run_id: str) -> None:
        self.slurm.as_user("touch", f"{self.far_run_dir(run_id)}/finish")

    def job_id(self, run_id: str) -> str:
        done = self.cli("status", "cluster", run_id, "--json")
        job: str = done.json()["jobId"]
        return job

    def take_all_gpus(self) -> str:
        """An outside job holding both GPUs until cancelled; its id."""
        return self.slurm.as_user(
            "sbatch", "--parsable", "--gres=gpu:2", "--output=/dev/null", "--wrap", "sleep 600"
        ).strip()


@pytest.fixture
def cluster(cli: Cli, slurm: SlurmLogin) -> Iterator[ClusterCli]:
    config = cli.daemon.config / "rtrain"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text('[hosts.cluster]\nscheduler = "slurm"\npartition = "gpu"\n')
    yield ClusterCli(cli, slurm)
    # Nothing of this test stays on the cluster.
    slurm.as_user("scancel", "-u", slurm.user)


def test_a_run_waits_for_gpus_with_slurms_reason_then_runs_and_completes(
    cluster: ClusterCli,
) -> None:
    blocker = cluster.take_all_gpus()
    run_id = cluster.cli.new_run_id()
    started = cluster.start(run_id, WAITS, "--gpus", "1")
    assert "queued" in started.out + started.err
    text = cluster.wait_status(run_id, "(Resources)", contains=True)
    assert text.startswith("queued (waiting for resources")
    assert "partition gpu" in text
    listed = cluster.cli("runs", "--host", "cluster", "--state", "queued")
    assert run_id in listed.out, listed
    # The batch script is kept in the run directory, for a person to read.
    script = cluster.slurm.as_user("cat", f"{cluster.far_run_dir(run_id)}/rtrain.sbatch")
    assert "--gres=gpu:1" in script
    cluster.slurm.as_user("scancel", blocker)
    cluster.wait_status(run_id, "running")
    cluster.finish(run_id)
    cluster.wait_status(run_id, "completed")
    log = cluster.cli("tail", "cluster", run_id, "--no-follow")
    assert "step 2 | loss 0.5" in log.out


def test_a_workload_that_exits_3_is_failed_exit_3(cluster: ClusterCli) -> None:
    run_id = cluster.cli.new_run_id()
    cluster.start(run_id, FAILS, "--gpus", "0")
    cluster.wait_status(run_id, "failed (exit 3)")
    as_json = cluster.cli("status", "cluster", run_id, "--json").json()
    assert as_json["exitCode"] == 3
    assert as_json["jobId"].isdigit()
    # Its log's metrics are read as on any host: the run dir is shared with the compute node.
    metrics = cluster.cli("metrics", "cluster", run_id, "--json")
    assert metrics.code == 0, metrics
    assert '"loss"' in metrics.out and "1.0" in metrics.out, metrics


def test_stop_cancels_a_pending_job(cluster: ClusterCli) -> None:
    blocker = cluster.take_all_gpus()
    run_id = cluster.cli.new_run_id()
    cluster.start(run_id, QUICK, "--gpus", "1")
    job = cluster.job_id(run_id)
    stopped = cluster.cli("stop", "cluster", run_id)
    assert stopped.code == 0, stopped
    assert cluster.status(run_id).out.strip().startswith("stopped")
    # Slurm agrees: the job is over, and never ran.
    state = cluster.slurm.as_user("sacct", "-n", "-X", "-P", "-j", job, "-o", "State")
    assert state.strip().startswith("CANCELLED")
    cluster.slurm.as_user("scancel", blocker)


def test_stop_of_a_running_job_says_stopped_once_slurm_says_it_is_over(
    cluster: ClusterCli,
) -> None:
    run_id = cluster.cli.new_run_id()
    cluster.start(run_id, WAITS, "--gpus", "1")
    cluster.wait_status(run_id, "running")
    stopped = cluster.cli("stop", "cluster", run_id, "--json")
    assert stopped.code == 0, stopped
    assert stopped.json()["outcome"] == "stopped"
    job = cluster.job_id(run_id)
    queue = cluster.slurm.as_user("squeue", "-h", "-t", "all", "-j", job, "-o", "%T")
    assert queue.strip() in ("", "CANCELLED", "FAILED", "COMPLETED"), queue
    assert cluster.status(run_id).out.strip().startswith("stopped")


def test_a_job_cancelled_outside_rtrain_is_stopped_cancelled(cluster: ClusterCli) -> None:
    run_id = cluster.cli.new_run_id()
    cluster.start(run_id, WAITS, "--gpus", "1")
    cluster.wait_status(run_id, "running")
    cluster.slurm.as_user("scancel", cluster.job_id(run_id))
    cluster.wait_status(run_id, "stopped (CANCELLED)")


def test_a_run_goes_on_through_a_slurmctld_restart(cluster: ClusterCli) -> None:
    run_id = cluster.cli.new_run_id()
    cluster.start(run_id, WAITS, "--gpus", "1")
    cluster.wait_status(run_id, "running")
    cluster.slurm.cluster.restart_controller()
    assert cluster.status(run_id).out.strip() == "running"
    cluster.finish(run_id)
    cluster.wait_status(run_id, "completed")


def test_without_accounting_a_job_gone_from_the_queue_is_unknown_never_completed(
    cluster: ClusterCli,
) -> None:
    blocker = cluster.take_all_gpus()
    run_id = cluster.cli.new_run_id()
    cluster.start(run_id, QUICK, "--gpus", "1")
    job = cluster.job_id(run_id)
    # The daemon is away (a closed laptop) while the job ends and squeue forgets it.
    assert cluster.cli("daemon", "stop").code == 0
    deadline = time.monotonic() + WAIT_S
    while cluster.cli.daemon.daemon_pids():
        assert time.monotonic() < deadline, "the daemon did not stop"
        time.sleep(0.1)
    cluster.slurm.cluster.stop_accounting()
    try:
        # Cancelled outside rtrain while pending, it never wrote a status file; once squeue
        # forgets it (MinJobAge), nothing can say how it ended.
        cluster.slurm.as_user("scancel", job)
        deadline = time.monotonic() + WAIT_S
        while cluster.slurm.as_user("squeue", "-h", "-t", "all", "-j", job, "-o", "%T").strip():
            assert time.monotonic() < deadline, "squeue never forgot the job"
            time.sleep(0.5)
        text = cluster.wait_status(run_id, "unknown", contains=True)
        assert "accounting" in text, text
    finally:
        cluster.slurm.cluster.start_accounting()
        cluster.slurm.as_user("scancel", blocker)
    # With accounting back, sacct says how it ended.
    cluster.wait_status(run_id, "stopped (CANCELLED)")


@pytest.mark.slow
# Slurm ends a one-minute job up to 87 s in, and the test waits up to 150 s for it.
@pytest.mark.timeout(450)
def test_the_time_limit_warning_lets_the_trainer_checkpoint_then_it_is_failed_timeout(
    cluster: ClusterCli,
) -> None:
    run_id = cluster.cli.new_run_id()
    cluster.start(
        run_id,
        CHECKPOINTS_ON_WARNING,
        "--gpus",
        "1",
        "--time",
        "1",
        "--signal-before-timeout",
        "50",
    )
    cluster.wait_status(run_id, "running")
    # Slurm checks limits every 30 s: a one-minute job ends 64-87 s in.
    deadline = time.monotonic() + 150
    while (text := cluster.status(run_id).out.strip()) == "running":
        assert time.monotonic() < deadline, text
        time.sleep(1)
    assert text.startswith("failed (TIMEOUT)"), text
    saved = cluster.slurm.as_user("cat", f"{cluster.far_run_dir(run_id)}/ckpt.txt")
    assert saved == "saved"
    assert "checkpoint saved" in cluster.cli("tail", "cluster", run_id, "--no-follow").out


def test_fifty_queued_runs_cost_one_squeue_per_poll(cluster: ClusterCli) -> None:
    blocker = cluster.take_all_gpus()
    runs = [cluster.cli.new_run_id() for _ in range(50)]
    for run_id in runs:
        cluster.start(run_id, QUICK, "--gpus", "1")

    def for_all(line: str) -> bool:
        return all(run_id in line.split() for run_id in runs)

    # Counted per squeue, not per second: a loaded machine slows the polls, not their shape.
    # The first poll that asks about all fifty, then three more polls after it.
    wait_until("a poll of all fifty runs", lambda: any(map(for_all, cluster.slurm.squeue_calls())))
    first = next(i for i, line in enumerate(cluster.slurm.squeue_calls()) if for_all(line))
    wait_until("three more polls", lambda: len(cluster.slurm.squeue_calls()) >= first + 4)
    # The monitor's poll runs one squeue for all fifty, not fifty.
    polls = cluster.slurm.squeue_calls()[first:]
    assert all(for_all(line) for line in polls), polls
    listed = cluster.cli("runs", "--host", "cluster", "--state", "queued", "--json")
    assert {r["runId"] for r in listed.json()} >= set(runs)
    cluster.slurm.as_user("scancel", blocker)


def test_preflight_on_a_slurm_host_says_what_the_partition_offers(cluster: ClusterCli) -> None:
    done = cluster.cli("preflight", "cluster", "--gpus", "2", "--json")
    assert done.code == 0, done
    found = done.json()
    assert found["ok"] is True
    slurm = found["slurm"]
    assert slurm["partition"] == "gpu"
    assert slurm["gpus"] == 2
    assert slurm["accounting"] is True
    too_many = cluster.cli("preflight", "cluster", "--gpus", "4")
    assert too_many.code == 1
    assert "at most 2 GPU(s) on a node" in too_many.out + too_many.err


def test_hosts_shows_the_scheduler_and_free_gpus(cluster: ClusterCli) -> None:
    cluster.cli("preflight", "cluster")
    done = cluster.cli("hosts", "--json")
    [host] = [h for h in done.json() if h["alias"] == "cluster"]
    assert host["scheduler"] == "slurm"
    assert json.dumps(host).count("gpu") >= 1


def test_env_and_setup_reach_a_batch_job(cluster: ClusterCli) -> None:
    run_id = cluster.cli.new_run_id()
    shows = ["sh", "-c", "echo seed=$SEED; cat prepared.txt"]
    cluster.start(
        run_id, shows, "--gpus", "0", "--env", "SEED=7", "--setup", "echo ready >prepared.txt"
    )
    cluster.wait_status(run_id, "completed")
    log = cluster.cli("tail", "cluster", run_id, "--no-follow").out
    assert "seed=7" in log and "ready" in log


def test_a_failing_setup_step_is_failed_setup(cluster: ClusterCli) -> None:
    run_id = cluster.cli.new_run_id()
    cluster.start(run_id, QUICK, "--gpus", "0", "--setup", "exit 4")
    cluster.wait_status(run_id, "failed (setup, exit 4)")


def test_the_demo_trainer_trains_two_ranks_under_torchrun_inside_the_allocation(
    cluster: ClusterCli,
) -> None:
    python = far_torch_python()
    cluster.cli.file("data.jsonl", DATASET)
    run_id = cluster.cli.new_run_id()
    cluster.start(
        run_id, [], "-d", "data.jsonl", "--launcher", "torchrun", "--gpus", "2",
        "--python", python, config=TORCHRUN_DEMO_CONFIG,
    )  # fmt: skip
    cluster.wait_status(run_id, "completed")
    log = cluster.cli("tail", "cluster", run_id, "--no-follow").out
    header = next(line for line in log.splitlines() if line.startswith("rtrain demo trainer"))
    assert "ranks 2" in header, header
    trained = [float(loss) for _, loss in STEP.findall(log)]
    assert trained[-1] < trained[0], trained
    script = cluster.slurm.as_user("cat", f"{cluster.far_run_dir(run_id)}/rtrain.sbatch")
    assert "torch.distributed.run" in script and "--gres=gpu:2" in script


def test_restart_submits_the_recorded_job_again_as_a_new_attempt(cluster: ClusterCli) -> None:
    # Fails the first time, then (started again in the same run dir) goes on and completes.
    once = [
        "python3",
        "-c",
        "import os, sys\nif not os.path.exists('tried'):\n    open('tried', 'w').close()\n"
        "    sys.exit(3)\nprint('resumed and done')",
    ]
    run_id = cluster.cli.new_run_id()
    cluster.start(run_id, once, "--gpus", "1", "--time", "10")
    cluster.wait_status(run_id, "failed (exit 3)")
    first_job = cluster.job_id(run_id)
    restarted = cluster.cli("restart", "cluster", run_id, "--no-follow")
    assert restarted.code == 0, restarted
    cluster.wait_status(run_id, "completed")
    run = cluster.cli("status", "cluster", run_id, "--json").json()
    assert run["jobId"] != first_job
    assert [a["number"] for a in run["attempts"]] == [1, 2]
    log = cluster.cli("tail", "cluster", run_id, "--no-follow").out
    assert f"==> rtrain: attempt 2 of {run_id}" in log and "resumed and done" in log
    # The same request of Slurm as the first attempt's.
    script = cluster.slurm.as_user("cat", f"{cluster.far_run_dir(run_id)}/rtrain.sbatch")
    assert "--time=10" in script and "--gres=gpu:1" in script


def test_tail_of_a_queued_run_says_what_it_waits_for_then_streams_the_log(
    cluster: ClusterCli,
) -> None:
    blocker = cluster.take_all_gpus()
    run_id = cluster.cli.new_run_id()
    cluster.start(run_id, QUICK, "--gpus", "1")
    cluster.wait_status(run_id, "(Resources)", contains=True)
    tail = subprocess.Popen(
        [rtrain_executable(), "tail", "cluster", run_id],
        env=cluster.cli.env,
        cwd=cluster.cli.cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert tail.stderr is not None
        said = tail.stderr.readline()
        assert f"{run_id} on cluster is queued: waiting for resources" in said, said
        cluster.slurm.as_user("scancel", blocker)
        out, err = tail.communicate(timeout=WAIT_S)
    finally:
        tail.kill()
    assert "step 1 | loss 1.0" in out
    assert err.strip().endswith(f"{run_id} on cluster: completed"), err
    assert tail.returncode == 0


def test_a_max_duration_is_the_jobs_time_limit_and_both_at_once_are_refused(
    cluster: ClusterCli,
) -> None:
    run_id = cluster.cli.new_run_id()
    cluster.start(run_id, WAITS, "--gpus", "0", "--max-duration", "90s")
    # Slurm counts whole minutes: 90 s is a limit of 2.
    script = cluster.slurm.as_user("cat", f"{cluster.far_run_dir(run_id)}/rtrain.sbatch")
    assert "--time=00:02:00" in script
    limit = cluster.slurm.as_user("squeue", "-h", "-j", cluster.job_id(run_id), "-o", "%l")
    assert limit.strip() == "2:00"
    assert cluster.cli("status", "cluster", run_id, "--json").json()["maxDuration"] == 90
    assert cluster.cli("stop", "cluster", run_id).code == 0
    cluster.cli.file("cfg.yaml", "steps: 1\n")
    both = cluster.cli(
        "start", "cluster", "-c", "cfg.yaml", "--workdir", cluster.workdir, "--no-follow",
        "--max-duration", "1h", "--time", "2:00:00", "--", *QUICK,
    )  # fmt: skip
    assert both.code == 2, both
    assert "give one of them, not both" in both.err


def test_a_reverse_forward_is_refused_for_a_batch_job_before_anything_is_submitted(
    cluster: ClusterCli,
) -> None:
    """A reverse forward listens on the login node's loopback, which a job on a compute node
    does not share: refused, at the start and for a running job, with nothing submitted."""
    run_id = cluster.cli.new_run_id()
    cluster.cli.file("cfg.yaml", "steps: 1\n")
    refused = cluster.cli(
        "start", "cluster", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cluster.workdir,
        "--no-follow", "--gpus", "0", "--reverse", "5000", "--", *QUICK,
    )  # fmt: skip
    assert refused.code == 2, refused
    assert "--reverse listens on 127.0.0.1 of cluster itself" in refused.err
    assert "batch jobs on other nodes" in refused.err
    assert cluster.slurm.as_user("squeue", "-h", "-n", f"rtrain-{run_id}", "-o", "%i").strip() == ""
    assert cluster.cli("status", "cluster", run_id).code != 0
    cluster.start(run_id, WAITS, "--gpus", "0")
    asked = cluster.cli("forward", "cluster", "5000", "--reverse", "--run", run_id)
    assert asked.code == 2, asked
    assert "batch jobs on other nodes" in asked.err
    assert cluster.cli("stop", "cluster", run_id).code == 0


def test_a_trainers_own_files_named_as_rtrains_change_nothing_on_slurm(
    cluster: ClusterCli,
) -> None:
    """A job whose trainer writes `status` (0), `stop_requested`, `setup_failed`,
    `train.jobid` and `meta.json` of its own in its working directory, then fails: the run
    reads failed (exit 3), not completed, stopped or failed setup; its job is still found,
    and it restarts from rtrain's own record."""
    names = {
        "status": "0\n",
        "stop_requested": "1\n",
        "setup_failed": "",
        "train.jobid": "1\n",
        "meta.json": "{}\n",
    }
    trainer = [
        "python3",
        "-c",
        f"import os, sys, time\nfor n, t in {names!r}.items(): open(n, 'w').write(t)\n"
        "print('step 1 | loss 1.0', flush=True)\n"
        "while not os.path.exists('finish'): time.sleep(0.1)\nsys.exit(3)",
    ]
    run_id = cluster.cli.new_run_id()
    cluster.start(run_id, trainer, "--gpus", "0")
    cluster.wait_status(run_id, "running")
    job = cluster.job_id(run_id)
    run_dir = cluster.far_run_dir(run_id)
    wait_until("step 1", lambda: "step 1" in cluster.slurm.as_user("cat", f"{run_dir}/train.log"))
    assert cluster.status(run_id).out.strip() == "running"
    assert cluster.job_id(run_id) == job
    cluster.finish(run_id)
    cluster.wait_status(run_id, "failed (exit 3)")
    for name, text in names.items():
        assert cluster.slurm.as_user("cat", f"{run_dir}/{name}") == text, name
    cluster.slurm.as_user("rm", f"{run_dir}/finish")
    again = cluster.cli("restart", "cluster", run_id, "--no-follow")
    assert again.code == 0, again
    cluster.wait_status(run_id, "running")
    assert cluster.job_id(run_id) != job
    assert cluster.cli("stop", "cluster", run_id).code == 0
