"""`rtrain tensorboard`: the real tensorboard wheel on the plain host, over event files a real
trainer wrote (torch's SummaryWriter), read here over HTTP through the forward; one
TensorBoard for two runs; gone after `rm` of the last."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from tests.cli.conftest import WAIT_S, Cli
from tests.operations.processes import argv_pids

# Writes a scalar curve with torch's own TensorBoard writer into runs/, as trainers do.
WRITER = """
from torch.utils.tensorboard import SummaryWriter
w = SummaryWriter("runs")
for step in range(5):
    w.add_scalar("loss", 1.0 / (step + 1), step)
w.close()
print("wrote", flush=True)
"""


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=WAIT_S) as answer:
        return json.loads(answer.read())


def refused(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=WAIT_S).close()
    except (urllib.error.URLError, ConnectionError):
        return True
    return False


def tensorboard_processes(run_id: str) -> list[int]:
    """Far TensorBoard processes whose spec names `run_id`."""
    return argv_pids(
        lambda argv: b"tensorboard.main" in argv and any(run_id.encode() in w for w in argv)
    )


def written_run(cli: Cli, python: str) -> str:
    run_id = cli.new_run_id("tb")
    cli.start(run_id, "{python}", "-c", WRITER, python=python)
    cli.wait_state("plain", run_id, "completed")
    return run_id


def test_tensorboard_serves_runs_through_the_forward_and_ends_with_rm(
    cli: Cli, trackers_python: str
) -> None:
    first = written_run(cli, trackers_python)
    opened = cli("tensorboard", "plain", first, "--json")
    assert opened.code == 0, opened
    info = opened.json()
    url = info["url"]
    assert url.startswith("http://127.0.0.1:") and info["runs"] == [first], info
    assert info["python"] == trackers_python
    # TensorBoard names each folder of event files under its run: RUN/runs.
    assert list(get_json(url + "data/runs")) == [f"{first}/runs"]
    tags = get_json(url + "data/plugin/scalars/tags")
    assert "loss" in tags[f"{first}/runs"], tags
    points = get_json(f"{url}data/plugin/scalars/scalars?run={first}/runs&tag=loss")
    assert [step for _, step, _ in points] == [0, 1, 2, 3, 4], points

    # A second run: the same TensorBoard (its URL unchanged) shows both.
    second = written_run(cli, trackers_python)
    again = cli("tensorboard", "plain", second)
    assert again.code == 0, again
    assert again.out_lines == [url], again
    assert sorted(get_json(url + "data/runs")) == sorted([f"{first}/runs", f"{second}/runs"])
    assert tensorboard_processes(second)

    # rm of one: it serves the other alone; rm of the last: it is gone, here and there.
    assert cli("rm", "plain", first).code == 0
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            if list(get_json(url + "data/runs")) == [f"{second}/runs"]:
                break
        except (urllib.error.URLError, ConnectionError):
            pass  # restarting
        assert time.monotonic() < deadline, "the TensorBoard still shows the removed run"
        time.sleep(0.2)
    assert cli("rm", "plain", second).code == 0
    deadline = time.monotonic() + WAIT_S
    while tensorboard_processes(second) or not refused(url):
        assert time.monotonic() < deadline, "a TensorBoard outlived the rm of its last run"
        time.sleep(0.2)
    assert cli("forwards", "--json").json() == []


def test_stop_ends_it(cli: Cli, trackers_python: str) -> None:
    run_id = written_run(cli, trackers_python)
    opened = cli("tensorboard", "plain", run_id)
    assert opened.code == 0, opened
    url = opened.out_lines[0]
    assert get_json(url + "data/runs")
    stopped = cli("tensorboard", "plain", "--stop")
    assert stopped.code == 0, stopped
    assert refused(url) and not tensorboard_processes(run_id)


def test_rm_ends_a_tensorboard_an_earlier_daemon_started(cli: Cli, trackers_python: str) -> None:
    run_id = written_run(cli, trackers_python)
    opened = cli("tensorboard", "plain", run_id)
    assert opened.code == 0, opened
    url = opened.out_lines[0]
    assert get_json(url + "data/runs")
    assert cli("daemon", "stop").code == 0  # the forward ends; the far TensorBoard runs on
    assert tensorboard_processes(run_id)
    assert cli("rm", "plain", run_id).code == 0  # a new daemon, which never started it
    deadline = time.monotonic() + WAIT_S
    while tensorboard_processes(run_id):
        assert time.monotonic() < deadline, "rm left the TensorBoard of an earlier daemon"
        time.sleep(0.2)


def test_a_python_without_tensorboard_is_one_sentence(cli: Cli) -> None:
    run_id = cli.new_run_id("notb")
    cli.start(run_id, "{python}", "-c", "print('done')")
    cli.wait_state("plain", run_id, "completed")
    done = cli("tensorboard", "plain", run_id)
    assert done.code == 1, done
    (sentence,) = done.err_lines
    assert "has no tensorboard; install it there:" in sentence, done
    assert cli("forwards", "--json").json() == []


def test_a_logdir_outside_the_run_is_refused(cli: Cli) -> None:
    done = cli("tensorboard", "plain", "some-run", "--logdir", "../other")
    assert done.code == 2, done
    assert "outside the run directory" in done.err, done


def test_preflight_says_whether_the_python_has_tensorboard(cli: Cli, trackers_python: str) -> None:
    has = cli("preflight", "plain", "--python", trackers_python, "--gpus", "0", "--json")
    [line] = [f for f in has.json()["findings"] if f["topic"] == "trackers"]
    assert line.get("level", "ok") == "ok" and line["text"].startswith("tensorboard "), line
    lacks = cli("preflight", "plain", "--python", "/usr/bin/python3", "--gpus", "0", "--json")
    [line] = [f for f in lacks.json()["findings"] if f["topic"] == "trackers"]
    assert line["level"] == "info", line
    assert "rtrain tensorboard needs tensorboard" in line["text"], line
    assert "/usr/bin/python3 -m pip install tensorboard ipykernel" in line["text"], line
