"""`rtrain kernel`: a real ipykernel started as a detached run on the plain host, a cell run
through jupyter_client over the forwards, the client gone and the connection dropped, then
attached again with the kernel's state intact; the guard counts it busy only while a cell
runs; `stop` ends it like any run."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient

from tests.cli.conftest import WAIT_S, Cli
from tests.forwards.test_forwards import kill_master
from tests.remote.test_guard import far


def connected(connection_file: Path) -> Any:
    client = BlockingKernelClient()
    client.load_connection_file(str(connection_file))
    client.start_channels()
    client.wait_for_ready(timeout=WAIT_S)
    return client


def run_cell(client: Any, code: str) -> list[str]:
    """Run `code`; what it printed or returned, in order."""
    said: list[str] = []

    def output(message: dict[str, Any]) -> None:
        kind, content = message["msg_type"], message["content"]
        if kind == "stream":
            said.append(content["text"])
        elif kind == "execute_result":
            said.append(content["data"]["text/plain"])

    reply = client.execute_interactive(code, timeout=WAIT_S, output_hook=output)
    assert reply["content"]["status"] == "ok", reply
    return said


def guard_look(cli: Cli) -> list[list[str]]:
    return far(cli.hosts, "guard_loop", str(cli.far_workdir), "look", "1")


def test_a_kernel_outlives_its_client_and_its_connection(
    cli: Cli, trackers_python: str, tmp_path: Path
) -> None:
    first_file = tmp_path / "first.json"
    args = ["--python", trackers_python, "--gpus", "0", "--workdir", cli.workdir]
    opened = cli("kernel", "plain", *args, "--connection-file", str(first_file), "--json")
    assert opened.code == 0, opened
    answer = opened.json()
    run_id = answer["runId"]
    assert answer["started"] is True and answer["connectionFile"] == str(first_file)
    assert stat.S_IMODE(first_file.stat().st_mode) == 0o600
    connection = json.loads(first_file.read_text())
    far_connection = json.loads((cli.far_run_dir(run_id) / "kernel.json").read_text())
    assert connection["key"] == far_connection["key"]
    # The far ports are this machine's too (the host is this machine): others here.
    assert connection["shell_port"] != far_connection["shell_port"]

    client = connected(first_file)
    assert run_cell(client, "x = 41\nprint('set')") == ["set\n"]
    assert run_cell(client, "x + 1") == ["42"]
    assert cli("status", "plain", run_id).out.strip() == "running"
    assert [row[0] for row in guard_look(cli)] == ["idle"]  # open, not computing

    # A cell that computes until told to stop: the guard counts the host busy meanwhile.
    release = cli.far_run_dir(run_id) / "release"
    client.execute(f"import os, time\nwhile not os.path.exists({str(release)!r}): time.sleep(0.05)")
    deadline = time.monotonic() + WAIT_S
    while guard_look(cli) != [["busy", f"run {run_id} is running"]]:
        assert time.monotonic() < deadline, "a computing kernel never counted as busy"
        time.sleep(0.1)
    release.touch()
    deadline = time.monotonic() + WAIT_S
    while guard_look(cli) != [["idle"]]:
        assert time.monotonic() < deadline, "a kernel that finished its cell stayed busy"
        time.sleep(0.1)

    # The laptop goes away: the client is gone, the host's connection drops.
    client.stop_channels()
    kill_master(cli)

    second_file = tmp_path / "second.json"
    again = cli("kernel", "plain", run_id, "--connection-file", str(second_file))
    assert again.code == 0, again
    assert again.out_lines == [str(second_file)], again
    assert "attached to kernel" in again.err, again
    client = connected(second_file)
    assert run_cell(client, "x + 1") == ["42"]
    client.stop_channels()

    stopped = cli("stop", "plain", run_id)
    assert stopped.code == 0, stopped
    cli.wait_state("plain", run_id, "stopped")
    assert cli("rm", "plain", run_id).code == 0
    assert cli("forwards", "--json").json() == []


def test_a_python_without_ipykernel_is_one_sentence(cli: Cli, tmp_path: Path) -> None:
    done = cli(
        "kernel", "plain", "--python", "/usr/bin/python3", "--gpus", "0",
        "--workdir", cli.workdir, "--connection-file", str(tmp_path / "k.json"),
    )  # fmt: skip
    assert done.code == 1, done
    (sentence,) = done.err_lines
    assert "has no ipykernel" in sentence, done
    assert not (tmp_path / "k.json").exists()


def test_python_with_a_run_is_refused(cli: Cli) -> None:
    done = cli("kernel", "plain", "some-run", "--python", "python3")
    assert done.code == 2, done
    assert done.err_lines == [
        "rtrain: --python starts a new kernel; leave it out to attach to RUN."
    ], done
