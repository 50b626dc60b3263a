"""GPUs shared by runs on one host, through the CLI on the fake 2-GPU host `plain`.

Each test has its own remote workdir (the claims live there), so other tests' runs on the
shared test user never hold these tests' GPUs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest

from tests.cli.conftest import WAIT_S, Cli
from tests.cli.leftovers import kill_marked
from tests.cli.rtrain_command import Outcome, run_rtrain
from tests.hosts import GPUSHARE_USER
from tests.second_daemon import second_daemon_env

# Says which GPUs it sees, then runs until the file `finish` appears in its run dir.
HOLDER = (
    "import os, time\n"
    "print('cuda=' + repr(os.environ.get('CUDA_VISIBLE_DEVICES')), flush=True)\n"
    "while not os.path.exists('finish'):\n"
    "    time.sleep(0.05)\n"
)


def start_holder(cli: Cli, run_id: str, *extra: str, gpus: str = "1") -> Outcome:
    cli.file("cfg.yaml", "steps: 1\n")
    return cli(
        "start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cli.workdir,
        "--gpus", gpus, "--no-follow", *extra, "--", "{python}", "-c", HOLDER,
    )  # fmt: skip


def seen_gpus(cli: Cli, run_id: str) -> str:
    cli.wait_far_log(run_id, "cuda=")
    log = (cli.far_run_dir(run_id) / "train.log").read_text()
    found = re.search(r"^cuda=(.*)$", log, re.MULTILINE)
    assert found, log
    return found.group(1)


def wait_status(cli: Cli, run_id: str, pattern: str, env: dict[str, str] | None = None) -> str:
    deadline = time.monotonic() + WAIT_S
    while True:
        done = run_rtrain(["status", "plain", run_id], env=env or cli.env, cwd=cli.cwd)
        if re.fullmatch(pattern, done.out.strip()):
            return done.out.strip()
        assert time.monotonic() < deadline, f"{run_id} never matched {pattern!r}: {done}"
        time.sleep(0.2)


@pytest.fixture
def second_daemon(cli: Cli) -> Iterator[dict[str, str]]:
    """The environment of another user's laptop: a daemon of its own, the same hosts."""
    with second_daemon_env(cli.env, cli.cwd) as env:
        yield env


def test_runs_get_gpus_of_their_own_and_one_too_many_is_refused_naming_them(cli: Cli) -> None:
    first, second, third = (cli.new_run_id(name) for name in ("a", "b", "c"))
    assert start_holder(cli, first).code == 0
    assert start_holder(cli, second).code == 0
    seen = {seen_gpus(cli, first), seen_gpus(cli, second)}
    assert seen == {"'0'", "'1'"}, seen

    refused = start_holder(cli, third)
    assert refused.code == 1, refused
    assert "only 0 of 2 on plain are free" in refused.err, refused
    assert first in refused.err and second in refused.err and "--wait" in refused.err
    assert len(refused.err_lines) == 1, refused
    assert not cli.far_run_dir(third).exists()  # refused before anything was shipped

    preflight = cli("preflight", "plain", "--workdir", cli.workdir)
    assert "  gpu: 0 of 2 free now" in preflight.out_lines, preflight
    cli.finish(first)
    cli.wait_state("plain", first, "completed")
    preflight = cli("preflight", "plain", "--workdir", cli.workdir, "--json")
    assert preflight.json()["gpusFree"] == 1, preflight
    cli.finish(second)


def test_gpus_0_sees_no_gpu_and_too_many_for_the_host_is_refused(cli: Cli) -> None:
    none = cli.new_run_id("none")
    assert start_holder(cli, none, gpus="0").code == 0
    assert seen_gpus(cli, none) == "''"
    cli.finish(none)
    many = start_holder(cli, cli.new_run_id("many"), gpus="3")
    assert many.code == 1 and "asks for 3 GPU(s), but plain has 2" in many.err, many


def test_a_waiting_run_is_queued_and_starts_when_gpus_free_even_with_the_daemon_stopped(
    cli: Cli,
) -> None:
    holders = [cli.new_run_id("hold"), cli.new_run_id("hold")]
    for run_id in holders:
        assert start_holder(cli, run_id).code == 0
    queued = cli.new_run_id("queued")
    done = start_holder(cli, queued, "--wait")
    assert done.code == 0, done
    assert f"queued {queued} on plain: waiting for 1 GPU(s) of 2" in done.out, done
    reason = wait_status(cli, queued, r"queued \(waiting for 1 GPU\(s\) of 2: .*\)")
    assert holders[0] in reason and holders[1] in reason
    listed = cli("runs", "--host", "plain", "--json").json()
    assert {run["runId"]: run["state"] for run in listed}[queued] == "queued"

    # Nobody is connected any more: the host itself starts the run once a GPU is free.
    assert cli("daemon", "stop").code == 0
    cli.finish(holders[1])
    freed = seen_gpus(cli, holders[1])
    assert seen_gpus(cli, queued) == freed
    assert wait_status(cli, queued, "running") == "running"
    cli.finish(holders[0])
    cli.finish(queued)
    cli.wait_state("plain", queued, "completed")


def test_a_lost_run_releases_its_gpu(cli: Cli) -> None:
    lost, other = cli.new_run_id("lost"), cli.new_run_id("other")
    assert start_holder(cli, lost, gpus="2").code == 0
    seen_gpus(cli, lost)
    kill_marked(lost)  # the wrapper too: no exit status, as after an OOM kill of the session
    wait_status(cli, lost, r"lost \(.*\)")
    assert start_holder(cli, other, gpus="2").code == 0
    assert seen_gpus(cli, other) == "'0,1'"
    cli.finish(other)


def test_two_daemons_starting_at_once_never_get_the_same_gpu(
    cli: Cli, second_daemon: dict[str, str]
) -> None:
    # Both look before shipping and see both GPUs free; the claims on the host decide.
    runs = [cli.new_run_id("mine"), cli.new_run_id("mine"), cli.new_run_id("theirs")]
    envs = [cli.env, cli.env, second_daemon]
    cli.file("cfg.yaml", "steps: 1\n")
    outcomes: dict[str, Outcome] = {}

    def start(run_id: str, env: dict[str, str]) -> None:
        outcomes[run_id] = run_rtrain(
            [
                "start", "plain", "-c", "cfg.yaml", "--run-id", run_id,
                "--workdir", cli.workdir, "--gpus", "1", "--no-follow", "--wait",
                "--", "{python}", "-c", HOLDER,
            ],
            env=env,
            cwd=cli.cwd,
        )  # fmt: skip

    threads = [threading.Thread(target=start, args=pair) for pair in zip(runs, envs, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    failed = {r: (o.code, o.err) for r, o in outcomes.items() if o.code != 0}
    assert not failed and len(outcomes) == len(runs), failed
    # Two run at once on GPUs of their own; the third waits on the host until one ends.
    deadline = time.monotonic() + WAIT_S
    while True:
        started = [r for r in runs if "cuda=" in _far_log(cli, r)]
        if len(started) >= 2:
            break
        assert time.monotonic() < deadline, {r: _far_log(cli, r) for r in runs}
        time.sleep(0.1)
    assert len(started) == 2 and seen_gpus(cli, started[0]) != seen_gpus(cli, started[1])
    [waiting] = [r for r in runs if r not in started]
    wait_status(cli, waiting, r"queued \(.*\)", env=envs[runs.index(waiting)])
    cli.finish(started[0])
    assert seen_gpus(cli, waiting) == seen_gpus(cli, started[0])
    for run_id in runs:
        cli.finish(run_id)


def _far_log(cli: Cli, run_id: str) -> str:
    path = cli.far_run_dir(run_id) / "train.log"
    return path.read_text(errors="replace") if path.exists() else ""


@pytest.fixture
def someone_elses_job(cli: Cli) -> Iterator[None]:
    """A process of the far user that is no rtrain run computes on GPU 0 of `gpushare`
    (20 GB in use, as the fake nvidia-smi reports it): someone else's job."""
    job = subprocess.Popen(
        ["sleep", "300"],
        user=GPUSHARE_USER,
        group=GPUSHARE_USER,
        env={"PATH": "/usr/bin:/bin", "RTRAIN_FAKE_GPU_LOAD": "0:90:20000"},
        cwd="/",
    )
    far = cli.hosts.home(GPUSHARE_USER) / ".rtrain-cli" / cli.tag
    try:
        yield
    finally:
        job.kill()
        job.wait()
        kill_marked(cli.tag)
        shutil.rmtree(far, ignore_errors=True)


@pytest.mark.usefixtures("someone_elses_job")
def test_a_gpu_busy_with_another_process_is_taken_unless_shared(cli: Cli) -> None:
    cli.file("cfg.yaml", "steps: 1\n")

    def start(run_id: str, *extra: str) -> Outcome:
        return cli(
            "start", "gpushare", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cli.workdir,
            "--no-follow", *extra, "--", "{python}", "-c", "import os; print('cuda=' + "
            "repr(os.environ.get('CUDA_VISIBLE_DEVICES')), flush=True)",
        )  # fmt: skip

    both = start(cli.new_run_id("both"), "--gpus", "2")
    assert both.code == 1, both
    assert "GPU 0 is busy (20000 MiB used by another process)" in both.err, both
    assert "--share-gpus" in both.err, both
    preflight = cli("preflight", "gpushare", "--workdir", cli.workdir, "--json")
    assert preflight.json()["gpusFree"] == 1, preflight

    one = cli.new_run_id("one")
    assert start(one, "--gpus", "1").code == 0
    shared = cli.new_run_id("shared")
    assert start(shared, "--gpus", "2", "--share-gpus").code == 0
    far = cli.hosts.home(GPUSHARE_USER) / ".rtrain-cli" / cli.tag
    for run_id, seen in ((one, "cuda='1'"), (shared, "cuda='0,1'")):
        log = far / run_id / "train.log"
        deadline = time.monotonic() + WAIT_S
        while not (log.exists() and "cuda=" in log.read_text()):
            assert time.monotonic() < deadline, run_id
            time.sleep(0.05)
        assert seen in log.read_text(), log.read_text()


def test_a_run_holds_its_gpus_through_its_setup(cli: Cli) -> None:
    """The fault: run A (2 GPUs, a long setup) was still in its setup when run B asked for
    one, B was given it, and A then failed `exit 18` once its setup ended."""
    first, second = cli.new_run_id("setup"), cli.new_run_id("later")
    setup = "while [ ! -e go ]; do sleep 0.05; done; echo setup done"
    assert start_holder(cli, first, "--setup", setup, gpus="2").code == 0
    assert (cli.far_run_dir(first) / "rtrain-steps").exists()
    # A's claim is in place before its setup ends.
    wait_status(cli, first, "running")
    refused = start_holder(cli, second)
    assert refused.code == 1, refused
    assert "only 0 of 2 on plain are free" in refused.err and first in refused.err, refused

    (cli.far_run_dir(first) / "go").touch()
    assert seen_gpus(cli, first) in ("'0,1'", "'1,0'")
    log = (cli.far_run_dir(first) / "train.log").read_text()
    assert log.index("setup done") < log.index("cuda="), log
    cli.finish(first)
    cli.wait_state("plain", first, "completed")
