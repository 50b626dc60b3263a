"""The container wrapper (rtrain-container, daemon/containers/container_run.sh) as a far shell
runs it, in its `--print` form: the runtime's argv it would exec and the env file it writes,
for Apptainer (which this machine does not have: docs/containers.md), Podman and Docker.
Nothing is faked: no runtime runs, the wrapper says what it would run."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from rtrain.daemon.containers.run_container import wrapper_source
from tests.remote.conftest import shells

IMAGE = "/shared/images/train.sif"
SECRET = 'it\'s a "secret" $HOME `x`'
INNER = ': >"$0"; exec "$@"'


def _print(
    shell: str, run_dir: Path, runtime: str, names: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    wrapper = run_dir / "rtrain-container"
    wrapper.write_bytes(wrapper_source())
    argv = [shell, str(wrapper), "--print", runtime, IMAGE, "run-1", names, "python3", "train.py"]
    path = {"PATH": os.environ["PATH"]}
    return subprocess.run(
        argv, cwd=run_dir, env={**path, **env}, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("shell", shells())
def test_apptainer_execs_with_nv_the_run_dir_bound_and_secrets_in_a_quoted_env_file(
    shell: str, tmp_path: Path
) -> None:
    env = {"CUDA_VISIBLE_DEVICES": "1,3", "API_TOKEN": SECRET, "NOTE": "two\nlines"}
    done = _print(shell, tmp_path, "apptainer", "API_TOKEN,NOTE", env)
    assert done.returncode == 0, done.stderr
    d = str(tmp_path)
    env_file = f"{d}/.rtrain/container.env"
    assert done.stdout.splitlines() == [
        "apptainer", "exec", "--bind", f"{d}:{d}", "--pwd", d, "--nv",
        "--env-file", env_file, IMAGE, "/bin/sh", "-c", INNER, f"{d}/.rtrain/container.up",
        "python3", "train.py",
    ]  # fmt: skip
    assert "secret" not in done.stdout
    # Apptainer reads the file as shell: each value comes back exactly, line breaks and all.
    assert stat.S_IMODE(os.stat(env_file).st_mode) == 0o600
    read = subprocess.run(
        [shell, "-c", '. "$0"; printf "%s|%s" "$API_TOKEN" "$NOTE"', env_file],
        capture_output=True, text=True, env={}, timeout=60,
    )  # fmt: skip
    assert read.stdout == f"{SECRET}|two\nlines", read


@pytest.mark.parametrize("shell", shells())
def test_apptainer_without_claimed_gpus_has_no_nv(shell: str, tmp_path: Path) -> None:
    done = _print(shell, tmp_path, "singularity", "", {"CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 0, done.stderr
    words = done.stdout.splitlines()
    assert words[:2] == ["singularity", "exec"] and "--nv" not in words


@pytest.mark.parametrize(
    ("runtime", "gpu_words"),
    [
        ("podman", ["--device", "nvidia.com/gpu=1", "--device", "nvidia.com/gpu=3"]),
        ("docker", ["--gpus", '"device=1,3"']),
    ],
)
def test_podman_and_docker_take_an_env_file_and_only_the_claimed_gpus(
    tmp_path: Path, runtime: str, gpu_words: list[str]
) -> None:
    env = {"CUDA_VISIBLE_DEVICES": "1,3", "API_TOKEN": "plain-value", "NOTE": "two\nlines"}
    done = _print("/bin/sh", tmp_path, runtime, "API_TOKEN,NOTE", env)
    assert done.returncode == 0, done.stderr
    words = done.stdout.splitlines()
    env_file = tmp_path / ".rtrain" / "container.env"
    # One line a value; a value with a line break, which their env files cannot hold, by name.
    assert env_file.read_text() == "API_TOKEN=plain-value\n"
    assert ["--env", "NOTE"] == words[words.index("NOTE") - 1 : words.index("NOTE") + 1]
    at = words.index(IMAGE)
    assert words[at - len(gpu_words) : at] == gpu_words
    assert "plain-value" not in done.stdout


def test_a_host_with_no_runtime_is_one_sentence(tmp_path: Path) -> None:
    wrapper = tmp_path / "rtrain-container"
    wrapper.write_bytes(wrapper_source())
    empty = tmp_path / "bin"
    empty.mkdir()
    done = subprocess.run(
        ["/bin/sh", str(wrapper), "auto", IMAGE, "run-1", "", "true"],
        cwd=tmp_path, env={"PATH": str(empty)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 127
    assert done.stdout == (
        f"rtrain: cannot run the image {IMAGE}: this host has no podman, docker, apptainer "
        "or singularity on PATH\n"
    )
