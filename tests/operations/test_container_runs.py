"""`--image` end to end with the real Podman of the plain host's far user: the run happens
inside the image, its env and secrets reach it through an env file that is gone once the
container runs (never on a command line), and a stop leaves no container."""

from __future__ import annotations

import pwd
import time
from pathlib import Path
from typing import Any

import pytest

from tests.hosts import GPU_USER
from tests.hosts.container_image import IMAGE_MARK, user_containers
from tests.operations.harness import WAIT_S, Ops
from tests.operations.processes import run_pids

# Shell commands for the image's busybox sh (it has no python).
SHOW = (
    'cat /etc/os-release; echo "greeting=$GREETING"; echo "token=$API_TOKEN"; '
    'echo "marker=$RTRAIN_RUN_ID"; echo done > inside.txt; exit 3'
)
SLEEP = "echo up > up.txt; sleep 300"


def start_in_image(ops: Ops, image: str, script: str, run_id: str, **params: Any) -> None:
    ops.start(run_id=run_id, command=["sh", "-c", script], image=image, **params)


def wait_no_container(ops: Ops, name: str) -> list[str]:
    deadline = time.monotonic() + WAIT_S
    while name in (names := user_containers(ops.hosts, GPU_USER)):
        assert time.monotonic() < deadline, f"{name} is still there: {names}"
        time.sleep(0.2)
    return names


def test_a_run_happens_inside_the_image_with_its_env_and_exit_code(
    ops: Ops, podman_image: str
) -> None:
    run_id = ops.new_run_id()
    start_in_image(
        ops,
        podman_image,
        SHOW,
        run_id,
        env={"GREETING": "hello there"},
        secrets={"API_TOKEN": "s3cr3t-value"},
    )
    run = ops.wait_state(run_id, lambda run: run.state not in ("running", "unknown"))
    # The container's exit code is the run's.
    assert (run.state, run.exit_code) == ("failed", 3)
    log = (ops.far_run_dir(run_id) / "train.log").read_text()
    # Only the image has this os-release: the command ran inside it.
    assert f"ID={IMAGE_MARK}" in log
    assert "greeting=hello there" in log
    assert "token=s3cr3t-value" in log
    assert f"marker={run_id}" in log
    # The run dir is mounted at its own path and is the working directory.
    assert (ops.far_run_dir(run_id) / "inside.txt").read_text() == "done\n"
    # --rm: a run that ended leaves no container.
    wait_no_container(ops, f"rtrain-{run_id}")


def far_user_command_lines() -> list[str]:
    """The command line of every process of the far user."""
    uid = pwd.getpwnam(GPU_USER).pw_uid
    lines = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            lines.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (FileNotFoundError, ProcessLookupError, UnicodeDecodeError):
            continue
    return lines


def runtime_client_environ(run_id: str) -> bytes:
    """The environment of the runtime's client of the run (`podman run --name rtrain-RUN`)."""
    uid = pwd.getpwnam(GPU_USER).pw_uid
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or entry.stat().st_uid != uid:
                continue
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if b"run" in argv and f"rtrain-{run_id}".encode() in argv:
                return (entry / "environ").read_bytes()
        except (FileNotFoundError, ProcessLookupError):
            continue
    raise AssertionError(f"no runtime client of {run_id}")


def test_the_secret_is_on_no_command_line_and_its_env_file_is_gone(
    ops: Ops, podman_image: str
) -> None:
    run_id = ops.new_run_id()
    start_in_image(
        ops, podman_image, SLEEP + "; echo $API_TOKEN", run_id,
        secrets={"API_TOKEN": "zz-secret-zz"},
    )  # fmt: skip
    ops.wait_file(ops.far_run_dir(run_id) / "up.txt")
    lines = far_user_command_lines()
    # The runtime's client is there, reading an env file...
    env_file = f"{ops.far_run_dir(run_id)}/.rtrain/container.env"
    assert any(f"rtrain-{run_id}" in line and f"--env-file {env_file}" in line for line in lines)
    # ...the value is on no command line, not even in the client's own environment...
    assert not any("zz-secret-zz" in line for line in lines)
    assert b"zz-secret-zz" not in runtime_client_environ(run_id)
    # ...and the file goes once the container runs.
    deadline = time.monotonic() + WAIT_S
    while Path(env_file).exists():
        assert time.monotonic() < deadline, f"{env_file} is still there"
        time.sleep(0.1)
    stopped = ops.request("run/stop", {"host": "plain", "runId": run_id, "grace": 5})
    assert stopped.outcome == "stopped"


def test_the_env_file_goes_when_the_container_never_starts(ops: Ops) -> None:
    run_id = ops.new_run_id()
    missing = "localhost/rtrain-no-such-image:1"
    start_in_image(ops, missing, "true", run_id, secrets={"API_TOKEN": "zz-secret-zz"})
    run = ops.wait_state(run_id, lambda run: run.state not in ("running", "unknown"))
    assert run.state == "failed", run
    env_file = ops.far_run_dir(run_id) / ".rtrain" / "container.env"
    deadline = time.monotonic() + WAIT_S
    while env_file.exists():
        assert time.monotonic() < deadline, f"{env_file} is still there"
        time.sleep(0.1)


def test_stop_leaves_no_container(ops: Ops, podman_image: str) -> None:
    run_id = ops.new_run_id()
    start_in_image(ops, podman_image, SLEEP, run_id)
    ops.wait_file(ops.far_run_dir(run_id) / "up.txt")
    name = f"rtrain-{run_id}"
    assert name in user_containers(ops.hosts, GPU_USER)
    result = ops.request("run/stop", {"host": "plain", "runId": run_id, "grace": 5})
    assert result.outcome == "stopped"
    assert result.run.state == "stopped"
    assert name not in user_containers(ops.hosts, GPU_USER)
    assert run_pids(run_id) == []


def test_a_forced_stop_that_kills_the_client_leaves_no_container(
    ops: Ops, podman_image: str
) -> None:
    run_id = ops.new_run_id()
    # The trainer ignores TERM, so only the force (KILL, the podman client too) ends it.
    start_in_image(ops, podman_image, "trap '' TERM; " + SLEEP, run_id)
    ops.wait_file(ops.far_run_dir(run_id) / "up.txt")
    result = ops.request(
        "run/stop", {"host": "plain", "runId": run_id, "grace": 0.5, "force": True}
    )
    assert result.outcome == "stopped"
    assert f"rtrain-{run_id}" not in user_containers(ops.hosts, GPU_USER)


def test_stop_of_an_ended_run_removes_the_container_it_left(ops: Ops, podman_image: str) -> None:
    run_id = ops.new_run_id()
    start_in_image(ops, podman_image, "exit 0", run_id)
    ops.wait_state(run_id, lambda run: run.state == "completed")
    name = f"rtrain-{run_id}"
    wait_no_container(ops, name)
    # What a reboot during the run leaves: the runtime's record of the container, with no
    # conmon left to remove it (made here by hand, as the far user).
    made = ops.hosts.run_as(GPU_USER, ["podman", "create", "--name", name, podman_image])
    assert made.returncode == 0, made.stderr
    assert name in user_containers(ops.hosts, GPU_USER)
    result = ops.request("run/stop", {"host": "plain", "runId": run_id})
    assert result.outcome == "not_running"
    assert result.run.state == "completed"
    assert name not in user_containers(ops.hosts, GPU_USER)


@pytest.mark.parametrize("image", ["-v/etc:/x", "img;rm -rf ~", "a b", "x" * 300])
def test_a_bad_image_name_is_refused_before_anything_runs(ops: Ops, image: str) -> None:
    run_id = ops.new_run_id()
    params = {"host": "plain", "runId": run_id, "workdir": ops.workdir, "gpus": 0}
    error = ops.error("run/start", {**params, "image": image, "command": ["true"]})
    assert error.kind == "invalid_command"
    assert "is not an image name" in error.message
    assert not ops.far_run_dir(run_id).exists()


def test_an_image_and_a_host_environment_are_refused_together(ops: Ops) -> None:
    run_id = ops.new_run_id()
    requirements = ops.file("requirements.txt", "tomli\n")
    error = ops.error(
        "run/start",
        {
            "host": "plain",
            "runId": run_id,
            "workdir": ops.workdir,
            "gpus": 0,
            "command": ["true"],
            "image": "python:3.12-slim",
            "requirements": str(requirements),
        },
    )
    assert error.kind == "invalid_command"
    assert "install the requirements in the image" in error.message
    assert not ops.far_run_dir(run_id).exists()


def preflight(ops: Ops, image: str, gpus: int) -> Any:
    return ops.request(
        "host/preflight", {"host": "plain", "workdir": ops.workdir, "gpus": gpus, "image": image}
    )


def container_lines(verdict: Any, level: str | None = None) -> list[str]:
    return [
        f.text
        for f in verdict.findings
        if f.topic == "container" and (level is None or f.level == level)
    ]


def test_preflight_names_the_runtime_and_finds_the_image(ops: Ops, podman_image: str) -> None:
    verdict = preflight(ops, podman_image, 0)
    said = container_lines(verdict)
    assert any(line.startswith("podman: podman version") for line in said)
    assert f"the image {podman_image} is there" in said
    assert container_lines(verdict, "problem") == []


def test_a_missing_image_is_a_preflight_problem_in_one_sentence(
    ops: Ops, podman_image: str
) -> None:
    verdict = preflight(ops, "localhost/rtrain-no-such-image:1", 0)
    assert not verdict.ok
    [problem] = container_lines(verdict, "problem")
    assert problem == (
        "the image localhost/rtrain-no-such-image:1 is not in podman's local store on plain; "
        "pull or load it there first (podman pull localhost/rtrain-no-such-image:1)."
    )


def test_an_image_that_sees_no_gpu_is_a_preflight_problem(ops: Ops, podman_image: str) -> None:
    # The plain host's GPUs are a fake nvidia-smi: no device the runtime could hand over.
    verdict = preflight(ops, podman_image, 1)
    [problem] = container_lines(verdict, "problem")
    assert problem.startswith(f"the image {podman_image} sees no GPU through podman: ")


def test_python_is_the_images_own(ops: Ops, podman_image: str) -> None:
    run_id = ops.new_run_id()
    # The host has python3; this image has none, so a {python} looked up inside it fails.
    ops.start(run_id=run_id, command=["{python}", "-c", "print(1)"], image=podman_image)
    run = ops.wait_state(run_id, lambda run: run.state not in ("running", "unknown"))
    assert (run.state, run.exit_code) == ("failed", 127)
    log = (ops.far_run_dir(run_id) / "train.log").read_text()
    assert "cannot start the trainer: python3 is not a program" in log
