"""How an environment is built: a uv project (pyproject.toml + uv.lock) under `--code` synced
with uv, uv installed into the host's cache where the host has none and its index has it, the
host's own uv where it has one, and pip where the index has no uv; the run's state says which
step a build is at and for how long so far."""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.cli.conftest import Cli
from tests.cli.test_environments import BASE_PYTHON, BUILD_WAIT_S, ENVS, LOCK, SHOW_ENV
from tests.hosts import GPU_USER

PROJECT = """\
[project]
name = "tiny-trainer"
version = "0.1"
requires-python = ">=3.8"
dependencies = ["termcolor"]
"""


def _uv_here() -> str:
    """This machine's uv (the dev extra installs it), which writes the test's uv.lock."""
    found = shutil.which("uv")
    assert found, "uv is not installed here: pip install uv (the dev extra has it)"
    return found


def _ended(cli: Cli, run_id: str) -> str:
    deadline = time.monotonic() + BUILD_WAIT_S
    while True:
        state = cli("status", "plain", run_id).out.strip()
        if state.split(" ")[0] in ("completed", "failed", "stopped", "lost"):
            return state
        assert time.monotonic() < deadline, f"{run_id} never ended: {state}"
        time.sleep(0.5)


def _log(cli: Cli, run_id: str) -> str:
    return (cli.far_run_dir(run_id) / "train.log").read_text(errors="replace")


def test_a_uv_project_under_code_is_synced_with_a_uv_rtrain_installs(cli: Cli) -> None:
    code = cli.cwd / "project"
    code.mkdir()
    (code / "pyproject.toml").write_text(PROJECT)
    locked = subprocess.run(
        [_uv_here(), "lock", "--quiet"], cwd=code, capture_output=True, text=True, timeout=180
    )
    assert locked.returncode == 0, locked.stderr
    # A requirements.txt beside it is not the lock: uv.lock wins.
    (code / "requirements.txt").write_text("no-such-package-rtrain-test==1.0\n")
    (code / "train.py").write_text(SHOW_ENV + "\n")
    first = cli.new_run_id()
    cli.start(first, "{python}", "train.py", code=str(code), python=BASE_PYTHON)
    assert _ended(cli, first) == "completed", _log(cli, first)
    log = _log(cli, first)
    assert "rtrain: installing uv into the host's cache (pip install uv)" in log, log
    assert "rtrain: building environment" in log and "(uv, uv.lock)" in log, log
    assert re.search(r"rtrain: environment \w+ built in [\d.]+ s with uv", log), log
    assert f"python in {cli.far_run_dir(first)}/rtrain-venv" in log, log
    assert (cli.far_workdir / ".cache/uv/bin/uv").exists()

    # The next start with the same lock uses it; the uv rtrain installed is not installed again.
    second = cli.new_run_id()
    cli.start(second, "{python}", "train.py", code=str(code), python=BASE_PYTHON)
    assert _ended(cli, second) == "completed"
    assert "is ready (built before): nothing to install" in _log(cli, second)

    # Another lock: built with the uv in the cache, nothing installed to get it.
    (code / "pyproject.toml").write_text(PROJECT.replace('"termcolor"', '"termcolor", "iniconfig"'))
    relocked = subprocess.run([_uv_here(), "lock", "--quiet"], cwd=code, timeout=180)
    assert relocked.returncode == 0
    third = cli.new_run_id()
    cli.start(third, "{python}", "-c", "import iniconfig", code=str(code), python=BASE_PYTHON)
    assert _ended(cli, third) == "completed", _log(cli, third)
    log = _log(cli, third)
    assert "installing uv" not in log and "built in" in log and "with uv" in log, log
    assert len([p for p in (cli.far_workdir / ENVS).iterdir() if p.name[0] != "."]) == 2


def _start_with_env(cli: Cli, run_id: str, lock: Path, *env: str) -> None:
    cli.file("cfg.yaml", "steps: 1\n")
    args = ["start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cli.workdir]
    args += ["--gpus", "0", "--no-follow", "--python", BASE_PYTHON, "--requirements", str(lock)]
    for pair in env:
        args += ["--env", pair]
    done = cli(*args, "--", "{python}", "-c", SHOW_ENV)
    assert done.code == 0, done


def test_an_index_without_uv_builds_with_pip(cli: Cli) -> None:
    # The host's index is a folder holding termcolor only: pip finds no uv in it.
    wheels = cli.hosts.home(GPU_USER) / f"wheels-{cli.tag}"
    wheels.mkdir(exist_ok=True)
    fetched = subprocess.run(
        ["pip", "download", "--no-deps", "--quiet", "-d", str(wheels), "termcolor"],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert fetched.returncode == 0, fetched.stderr
    lock = cli.file("requirements.txt", LOCK)
    run_id = cli.new_run_id()
    index = ["PIP_NO_INDEX=1", f"PIP_FIND_LINKS={wheels}", "PIP_CONFIG_FILE=/dev/null"]
    try:
        _start_with_env(cli, run_id, lock, *index)
        assert _ended(cli, run_id) == "completed", _log(cli, run_id)
    finally:
        shutil.rmtree(wheels, ignore_errors=True)
    log = _log(cli, run_id)
    assert "rtrain: uv could not be installed from the host's package index" in log, log
    assert "building with pip" in log
    assert re.search(r"rtrain: environment \w+ built in [\d.]+ s with pip", log), log
    assert not (cli.far_workdir / ".cache/uv").exists()

    # A uv.lock needs uv: on this host the run fails in one sentence, nothing built.
    project = cli.cwd / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(PROJECT)
    (project / "uv.lock").write_text('version = 1\nrequires-python = ">=3.8"\n')
    uv_run = cli.new_run_id()
    _start_with_env(cli, uv_run, project / "uv.lock", *index)
    state = _ended(cli, uv_run)
    assert state.startswith("failed (environment: a uv.lock is built with uv, and this host"), state


def test_the_host_s_own_uv_builds_and_nothing_is_installed(cli: Cli) -> None:
    # The host has uv on PATH (this machine's, linked into a folder of the far user's).
    tools = cli.hosts.home(GPU_USER) / f"tools-{cli.tag}"
    tools.mkdir(exist_ok=True)
    (tools / "uv").symlink_to(_uv_here())
    home = cli.hosts.home(GPU_USER)
    path = f"{tools}:{home}/.test-hosts/bin:/usr/local/bin:/usr/bin:/bin"
    lock = cli.file("requirements.txt", LOCK)
    run_id = cli.new_run_id()
    try:
        _start_with_env(cli, run_id, lock, f"PATH={path}")
        assert _ended(cli, run_id) == "completed", _log(cli, run_id)
    finally:
        shutil.rmtree(tools, ignore_errors=True)
    log = _log(cli, run_id)
    assert "installing uv" not in log, log
    assert re.search(r"rtrain: environment \w+ built in [\d.]+ s with uv", log), log
    assert not (cli.far_workdir / ".cache/uv").exists()


def test_preflight_says_how_long_a_build_it_waits_for_has_taken(cli: Cli) -> None:
    """`$/progress` of a preflight that builds: what the CLI draws on a terminal."""
    from rtrain.client.daemon_client import DaemonClient
    from rtrain.protocol import requests
    from tests.cli.test_environments import _far_key, _hold_build_lock

    lock = cli.file("requirements.txt", LOCK)
    # Another start builds this key (it holds its lock): the preflight waits, and says so.
    held = _hold_build_lock(cli, _far_key(cli, LOCK.encode()))
    seen: list[Any] = []
    got = threading.Event()

    def on(method: str, params: Any) -> None:
        seen.append((method, params))
        if method == "$/progress" and "s so far" in (params.value.message or ""):
            got.set()

    call = requests.host_preflight(
        host="plain", gpus=0, python=BASE_PYTHON, workdir=cli.workdir,
        requirements=str(lock), progress_token="env",
    )  # fmt: skip
    verdict: list[Any] = []
    cli("hosts")  # the daemon is up before the request's own client connects
    with DaemonClient.connect(timeout=BUILD_WAIT_S) as client:
        worker = threading.Thread(
            target=lambda: verdict.append(client.call(call, on_notification=on)), daemon=True
        )
        worker.start()
        try:
            assert got.wait(BUILD_WAIT_S), seen
        finally:
            held.close()
        worker.join(BUILD_WAIT_S)
    assert verdict and verdict[0].ok, (verdict, seen)
    values = [params.value for method, params in seen if method == "$/progress"]
    assert [v.kind for v in values][0] == "begin" and values[-1].kind == "end"
    assert all(v.title == f"Environment of {lock}" for v in values)
    report = next(v for v in values if v.kind == "report")
    assert re.fullmatch(
        r"building it, or waiting for another start's build: \d+ s so far", report.message
    ), report


def test_preflight_builds_a_uv_project_s_environment_ahead(cli: Cli) -> None:
    code = cli.cwd / "project"
    code.mkdir()
    (code / "pyproject.toml").write_text(PROJECT)
    locked = subprocess.run([_uv_here(), "lock", "--quiet"], cwd=code, timeout=180)
    assert locked.returncode == 0
    ahead = cli(
        "preflight", "plain", "--gpus", "0", "--python", BASE_PYTHON,
        "--workdir", cli.workdir, "--requirements", str(code / "uv.lock"),
    )  # fmt: skip
    assert ahead.code == 0, ahead
    built = re.search(
        r"environment: (\w+) built now from \S+uv.lock in [\d.]+ s with uv", ahead.out
    )
    assert built, ahead
    # A start of the same project under --code finds it built.
    (code / "train.py").write_text(SHOW_ENV + "\n")
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "train.py", code=str(code), python=BASE_PYTHON)
    assert _ended(cli, run_id) == "completed", _log(cli, run_id)
    assert f"rtrain: environment {built[1]} is ready (built before)" in _log(cli, run_id)
