"""Environments built once per lock (`--requirements`): a real pip install from the index on
the far host, reused by the next run with the same lock, rebuilt for a changed one, built once
for two runs at once, and nothing left of a build that failed; `rtrain envs` and `rtrain gc`."""

from __future__ import annotations

import fcntl
import os
import re
import time
from pathlib import Path

from tests.cli.conftest import Cli
from tests.hosts import GPU_USER

# A build is a venv and a pip install from the index: seconds, many more on a busy machine.
BUILD_WAIT_S = 240.0
BASE_PYTHON = "/usr/bin/python3"
# Small packages from the index that the far user's python does not have.
LOCK = "termcolor\n"
CHANGED_LOCK = "termcolor\niniconfig\n"
# Prints where its python lives and that the lock's package imports there.
SHOW_ENV = "import sys, termcolor; print('python in', sys.prefix)"
ENVS = ".cache/envs"


def _wait_ended(cli: Cli, run_id: str) -> str:
    deadline = time.monotonic() + BUILD_WAIT_S
    while True:
        state = cli("status", "plain", run_id).out.strip()
        if state.split(" ")[0] in ("completed", "failed", "stopped", "lost"):
            return state
        assert time.monotonic() < deadline, f"{run_id} never ended: {state}"
        time.sleep(0.5)


def _wait_log(cli: Cli, run_id: str, text: str) -> None:
    log = cli.far_run_dir(run_id) / "train.log"
    deadline = time.monotonic() + BUILD_WAIT_S
    while not (log.exists() and text in log.read_text(errors="replace")):
        assert time.monotonic() < deadline, f"{text!r} never reached {log}"
        time.sleep(0.1)


def _start(cli: Cli, run_id: str, lock: Path, *command: str) -> None:
    cli.start(
        run_id,
        *(command or ("{python}", "-c", SHOW_ENV)),
        requirements=str(lock),
        python=BASE_PYTHON,
    )


def _environment_of(cli: Cli, run_id: str) -> Path:
    return Path(os.readlink(cli.far_run_dir(run_id) / "rtrain-venv"))


def _built(cli: Cli) -> list[str]:
    envs = cli.far_workdir / ENVS
    return sorted(p.name for p in envs.iterdir() if not p.name.startswith("."))


def test_an_environment_is_built_once_per_lock_and_reused(cli: Cli) -> None:
    lock = cli.file("requirements.txt", LOCK)
    first = cli.new_run_id()
    _start(cli, first, lock)
    assert _wait_ended(cli, first) == "completed"
    log = (cli.far_run_dir(first) / "train.log").read_text()
    # The host has no uv: rtrain installs it into the host's cache from the index, and builds
    # with it (tests/cli/test_environment_tools.py has the host whose index has none).
    built = re.search(r"rtrain: environment (\w+) built in ([\d.]+) s with uv", log)
    assert built, log
    key = built[1]
    env = _environment_of(cli, first)
    assert env == cli.far_workdir / ENVS / key
    # {python} is the environment's, and the lock's package is in it.
    assert f"python in {cli.far_run_dir(first)}/rtrain-venv" in log
    assert _built(cli) == [key]

    second = cli.new_run_id()
    _start(cli, second, lock)
    assert _wait_ended(cli, second) == "completed"
    log = (cli.far_run_dir(second) / "train.log").read_text()
    assert f"rtrain: environment {key} is ready (built before): nothing to install" in log
    assert "building" not in log and "Installing" not in log
    assert _environment_of(cli, second) == env

    lock.write_text(CHANGED_LOCK)
    third = cli.new_run_id()
    _start(cli, third, lock, "{python}", "-c", "import iniconfig, termcolor")
    assert _wait_ended(cli, third) == "completed"
    log = (cli.far_run_dir(third) / "train.log").read_text()
    assert "rtrain: building environment" in log
    assert _environment_of(cli, third) != env
    assert len(_built(cli)) == 2

    # A restart with a new command: {python} is still the run's environment.
    again = cli(
        "restart", "plain", first, "--workdir", cli.workdir, "--",
        "{python}", "-c", "import termcolor; print('again in the environment')",
    )  # fmt: skip
    assert again.code == 0, again
    assert "again in the environment" in again.out_lines, again

    listed = cli("envs", "plain", "--workdir", cli.workdir, "--json")
    assert listed.code == 0, listed
    rows = {row["key"]: row for row in listed.json()["environments"]}
    assert set(rows) == set(_built(cli))
    assert sorted(rows[key]["usedBy"]) == sorted([first, second])
    assert rows[key]["sizeBytes"] > 0 and rows[key]["lastUsed"] is not None


def test_a_broken_requirement_fails_the_run_with_its_line_and_leaves_nothing(cli: Cli) -> None:
    lock = cli.file("requirements.txt", "termcolor\nno-such-package-rtrain-test==1.0\n")
    run_id = cli.new_run_id()
    _start(cli, run_id, lock)
    state = _wait_ended(cli, run_id)
    said = "failed (environment: line 2: no-such-package-rtrain-test==1.0: "
    assert state.startswith(said), state
    # No environment under any name, half-made or whole; the trainer never ran.
    leftovers = [p.name for p in (cli.far_workdir / ENVS).iterdir()]
    assert [name for name in leftovers if not name.endswith(".lock")] == [], leftovers
    assert "python in" not in (cli.far_run_dir(run_id) / "train.log").read_text()


def test_two_starts_needing_one_environment_build_it_once(cli: Cli) -> None:
    lock = cli.file("requirements.txt", LOCK)
    # Another builder of this key holds its lock (as a start that got there first would),
    # so both starts must wait for it, then one builds and the other uses what it built.
    key = _far_key(cli, LOCK.encode())
    held = _hold_build_lock(cli, key)
    try:
        runs = [cli.new_run_id(), cli.new_run_id()]
        for run_id in runs:
            _start(cli, run_id, lock)
        for run_id in runs:
            _wait_log(cli, run_id, f"waiting for environment {key}: another run is building it")
        # The state says what the run waits for, and, a few seconds on, for how long so far.
        waiting = f"queued (waiting for environment {key}: another run is building it"
        deadline = time.monotonic() + BUILD_WAIT_S
        while not re.fullmatch(
            re.escape(waiting) + r", \d+ s so far\)",
            status := cli("status", "plain", runs[0]).out.strip(),
        ):
            assert status.startswith(waiting), status
            assert time.monotonic() < deadline, status
            time.sleep(0.5)
        # --json carries the same words: the state, and the reason with the time so far.
        as_json = cli("status", "plain", runs[0], "--json").json()
        assert as_json["state"] == "queued", as_json
        assert as_json["reason"].startswith(waiting[len("queued (") :]), as_json
        assert re.search(r", \d+ s so far$", as_json["reason"]), as_json
    finally:
        held.close()
    assert [_wait_ended(cli, run_id) for run_id in runs] == ["completed", "completed"]
    logs = [(cli.far_run_dir(run_id) / "train.log").read_text() for run_id in runs]
    assert sum(f"rtrain: environment {key} built in" in log for log in logs) == 1, logs
    assert sum("is ready (another run built it)" in log for log in logs) == 1, logs
    assert _built(cli) == [key]


def test_gc_removes_an_environment_no_run_uses(cli: Cli) -> None:
    lock = cli.file("requirements.txt", LOCK)
    run_id = cli.new_run_id()
    _start(cli, run_id, lock)
    assert _wait_ended(cli, run_id) == "completed"
    [key] = _built(cli)
    kept = cli("gc", "plain", "--workdir", cli.workdir)
    assert kept.code == 0, kept
    assert _built(cli) == [key]  # its run is still there

    removed = cli("rm", "plain", run_id, "--workdir", cli.workdir)
    assert removed.code == 0, removed
    freed = cli("gc", "plain", "--workdir", cli.workdir)
    assert freed.code == 0, freed
    assert "1 environment(s) no run uses" in freed.out, freed
    assert _built(cli) == []


def _far_key(cli: Cli, lock: bytes) -> str:
    """The key the far side computes, by the far user's python, from env_build.py itself."""
    source = Path(__file__).parents[2] / "src/rtrain/daemon/remote/env_build.py"
    program = source.read_text().replace('if __name__ == "__main__":', "if False:")
    program += f"\nprint(environment_key({lock!r}))\n"
    done = cli.hosts.run_as(GPU_USER, [BASE_PYTHON, "-c", program])
    assert done.returncode == 0, done
    return done.stdout.strip()


class _HeldLock:
    def __init__(self, path: Path) -> None:
        self._file = path.open("a")
        fcntl.flock(self._file, fcntl.LOCK_EX)

    def close(self) -> None:
        self._file.close()


def _hold_build_lock(cli: Cli, key: str) -> _HeldLock:
    envs = cli.far_workdir / ENVS
    lock = envs / f".{key}.lock"
    # Made by the far user (as a builder would), so the runs can open it too.
    make = f"import os; os.makedirs({str(envs)!r}, 0o700, exist_ok=True); open({str(lock)!r}, 'a')"
    done = cli.hosts.run_as(GPU_USER, [BASE_PYTHON, "-c", make])
    assert done.returncode == 0, done
    return _HeldLock(lock)


def test_preflight_builds_the_environment_ahead_and_names_a_broken_line(cli: Cli) -> None:
    lock = cli.file("requirements.txt", LOCK)
    ahead = cli(
        "preflight", "plain", "--gpus", "0", "--python", BASE_PYTHON,
        "--workdir", cli.workdir, "--requirements", str(lock),
    )  # fmt: skip
    assert ahead.code == 0, ahead
    built = re.search(r"environment: (\w+) built now from .* in [\d.]+ s with uv", ahead.out)
    assert built, ahead
    assert _built(cli) == [built[1]]
    # No scratch of the check is left, and a start uses what it built.
    assert [p.name for p in (cli.far_workdir / ENVS).iterdir() if ".check-" in p.name] == []
    run_id = cli.new_run_id()
    _start(cli, run_id, lock)
    assert _wait_ended(cli, run_id) == "completed"
    log = (cli.far_run_dir(run_id) / "train.log").read_text()
    assert f"rtrain: environment {built[1]} is ready (built before)" in log
    again = cli(
        "preflight", "plain", "--gpus", "0", "--python", BASE_PYTHON,
        "--workdir", cli.workdir, "--requirements", str(lock),
    )  # fmt: skip
    assert f"environment: {built[1]} from {lock} is built already" in again.out, again

    broken = cli.file("broken.txt", "no-such-package-rtrain-test==1.0\n")
    refused = cli(
        "preflight", "plain", "--gpus", "0", "--python", BASE_PYTHON,
        "--workdir", cli.workdir, "--requirements", str(broken),
    )  # fmt: skip
    assert refused.code != 0, refused
    assert "environment: line 1: no-such-package-rtrain-test==1.0: " in refused.out, refused
    assert _built(cli) == [built[1]]


def test_the_code_s_requirements_txt_is_the_lock_unless_it_stays_home(cli: Cli) -> None:
    code = cli.cwd / "project"
    code.mkdir()
    (code / "requirements.txt").write_text(LOCK)
    (code / "train.py").write_text(SHOW_ENV + "\n")
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "train.py", code=str(code), python=BASE_PYTHON)
    assert _wait_ended(cli, run_id) == "completed"
    log = (cli.far_run_dir(run_id) / "train.log").read_text()
    assert "rtrain: building environment" in log and "python in" in log, log

    # Left home by its ignore rules: no environment, the host python as it is.
    (code / ".rtrainignore").write_text("requirements.txt\n")
    (code / "train.py").write_text("import sys; print('python in', sys.prefix)\n")
    plain = cli.new_run_id()
    cli.start(plain, "{python}", "train.py", code=str(code), python=BASE_PYTHON)
    cli.wait_state("plain", plain, "completed")
    log = (cli.far_run_dir(plain) / "train.log").read_text()
    assert "rtrain:" not in log and not (cli.far_run_dir(plain) / "rtrain-venv").exists()


def test_a_lock_rtrain_cannot_build_is_refused_before_anything_reaches_the_host(
    cli: Cli,
) -> None:
    lock = cli.file("requirements.txt", "termcolor\n-e .\n")
    cli.file("cfg.yaml", "steps: 1\n")
    run_id = cli.new_run_id()
    done = cli(
        "start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cli.workdir,
        "--requirements", str(lock), "--", "{python}", "-c", "pass",
    )  # fmt: skip
    assert done.code != 0, done
    assert done.err_lines[-1].startswith(f"rtrain: --requirements {lock} line 2: '-e .' ")
    assert not cli.far_run_dir(run_id).exists()


def test_a_run_that_claims_gpus_builds_after_its_claim_and_keeps_it(cli: Cli) -> None:
    lock = cli.file("requirements.txt", LOCK)
    cli.file("cfg.yaml", "steps: 1\n")
    run_id = cli.new_run_id()
    shown = "import os, termcolor; print('gpus', os.environ['CUDA_VISIBLE_DEVICES'])"
    done = cli(
        "start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cli.workdir,
        "--gpus", "1", "--no-follow", "--python", BASE_PYTHON, "--requirements", str(lock),
        "--", "{python}", "-c", shown,
    )  # fmt: skip
    assert done.code == 0, done
    assert _wait_ended(cli, run_id) == "completed"
    log = (cli.far_run_dir(run_id) / "train.log").read_text()
    # The gate claimed a GPU first; the build ran under it; the trainer got the claim.
    assert "rtrain: building environment" in log
    assert re.search(r"^gpus \d$", log, re.MULTILINE), log
