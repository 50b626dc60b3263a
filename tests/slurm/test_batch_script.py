"""The batch script and sbatch arguments: what Slurm is asked for, and quoting."""

import shlex
import subprocess
from pathlib import Path

import pytest

from rtrain.daemon.launchers.slurm.batch_script import (
    SlurmRequest,
    batch_script,
    check_request,
    sbatch_args,
    workload_line,
)


def run_batch_script(
    run_dir: Path, script: str, job_id: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The batch script run in its run dir as the batch shell would, with a bare PATH."""
    (run_dir / "rtrain.sbatch").write_text(script)
    env = {"PATH": "/usr/bin:/bin", **({"SLURM_JOB_ID": job_id} if job_id else {})}
    return subprocess.run(
        ["sh", "rtrain.sbatch"], cwd=run_dir, capture_output=True, text=True, env=env
    )


def test_gpus_time_and_partition_become_sbatch_options() -> None:
    args = sbatch_args(
        SlurmRequest(partition="gpu", time="2:00:00", gpus=2, gres_type="a100", account="lab"),
        "run-1",
        "/home/u/.rtrain/run-1",
    )
    assert "--gres=gpu:a100:2" in args
    assert "--time=2:00:00" in args
    assert "--partition=gpu" in args
    assert "--account=lab" in args
    assert "--output=/home/u/.rtrain/run-1/train.log" in args
    assert "--open-mode=append" in args
    assert "--no-requeue" in args


def test_the_time_limit_warning_is_sigusr2_to_the_batch_shell() -> None:
    args = sbatch_args(SlurmRequest(signal_before_timeout=90), "run-1", "/r")
    assert "--signal=B:USR2@90" in args


def test_no_gpus_asks_for_none() -> None:
    assert not any(a.startswith("--gres") for a in sbatch_args(SlurmRequest(gpus=0), "r", "/r"))


@pytest.mark.parametrize(
    ("request_", "word"),
    [
        (SlurmRequest(partition="gpu;rm -rf ~"), "partition"),
        (SlurmRequest(account="lab\n#SBATCH --uid=0"), "account"),
        (SlurmRequest(time="2 hours"), "time"),
        (SlurmRequest(extra_args=("-w node1",)), "extra sbatch argument"),
        (SlurmRequest(signal_before_timeout=0), "--signal-before-timeout"),
    ],
)
def test_a_value_sbatch_would_misread_is_one_sentence(request_: SlurmRequest, word: str) -> None:
    sentence = check_request(request_)
    assert sentence is not None and word in sentence


def test_the_command_reaches_the_workload_word_for_word(tmp_path: Path) -> None:
    words = ["printf", "%s|", "it's", "$HOME", "`id`", "a b", '--x="y"']
    script = batch_script("run-1", str(tmp_path), words, {"SEED": "1; echo pwned"}, ["--nodes=1"])
    done = run_batch_script(tmp_path, script, job_id="7")
    assert done.returncode == 0, done.stderr
    assert done.stdout == 'it\'s|$HOME|`id`|a b|--x="y"|'
    assert (tmp_path / ".rtrain" / "status").read_text() == "0\n"
    assert (tmp_path / ".rtrain" / "train.jobid").read_text() == "7\n"


def test_the_workloads_exit_status_lands_in_the_status_file(tmp_path: Path) -> None:
    script = batch_script(
        "run-1", str(tmp_path), ["sh", "-c", "echo $SEED; exit 3"], {"SEED": "it's 1"}, []
    )
    done = run_batch_script(tmp_path, script)
    assert done.returncode == 3
    assert done.stdout == "it's 1\n"
    assert (tmp_path / ".rtrain" / "status").read_text() == "3\n"


def test_a_failing_setup_step_keeps_the_trainer_from_starting(tmp_path: Path) -> None:
    script = batch_script(
        "run-1",
        str(tmp_path),
        ["sh", "-c", "touch trained"],
        {},
        [],
        setup="echo preparing; exit 4",
    )
    done = run_batch_script(tmp_path, script)
    assert done.returncode == 4
    assert "the setup command failed (exit 4)" in done.stdout
    assert (tmp_path / ".rtrain" / "status").read_text() == "4\n"
    assert (tmp_path / ".rtrain" / "setup_failed").exists()
    assert not (tmp_path / "trained").exists()


def test_on_several_nodes_torchrun_rendezvouses_on_the_first_from_slurms_variables() -> None:
    command = [
        "python3",
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node=2",
        "train.py",
        "--name",
        "it's $HOME",
    ]
    first, line = workload_line(command, nodes=2).split("\n")
    assert "SLURM_JOB_NODELIST" in first
    assert line.startswith("srun --ntasks-per-node=1 ")
    assert "--standalone" not in line
    assert '"--nnodes=$SLURM_NNODES"' in line and '"--rdzv-id=$SLURM_JOB_ID"' in line
    assert '"--rdzv-endpoint=$first_node:29400"' in line
    # The user's words stay single-quoted: nothing of them is expanded by the batch shell.
    assert shlex.split(line)[-1] == "it's $HOME"


def test_on_one_node_the_workload_is_the_command_as_it_is() -> None:
    command = ["python3", "-m", "torch.distributed.run", "--standalone", "train.py"]
    assert workload_line(command, nodes=1) == " ".join(command)


def test_an_image_runs_the_workload_as_a_pyxis_step_with_the_run_dir_mounted() -> None:
    run_dir = "/home/me/.rtrain/run-1"
    script = batch_script(
        "run-1",
        run_dir,
        ["python3", "train.py", "it's"],
        {},
        [],
        setup="echo ready",
        image="nvcr.io/nvidia/pytorch:24.05-py3",
    )
    [line] = [line for line in script.splitlines() if "train.py" in line]
    words = shlex.split(line)
    assert words[:5] == [
        "srun",
        "--ntasks=1",
        "--container-image=nvcr.io/nvidia/pytorch:24.05-py3",
        f"--container-mounts={run_dir}:{run_dir}",
        f"--container-workdir={run_dir}",
    ]
    assert words[5:8] == ["python3", "train.py", "it's"]
    # The setup step runs in the batch shell, on the node, before the step.
    assert script.index("echo ready") < script.index("--container-image")


def test_on_several_nodes_each_task_runs_in_the_image() -> None:
    first, line = workload_line(["python3", "train.py"], 2, ["--container-image=img"]).split("\n")
    assert line.startswith("srun --ntasks-per-node=1 --kill-on-bad-exit=1 --container-image=img ")


def test_without_an_image_there_is_no_container_option() -> None:
    script = batch_script("run-1", "/tmp/run-1", ["python3", "train.py"], {}, [])
    assert "--container" not in script
