"""Stock JSON-RPC clients drive a whole run on `local` through the daemon, as a generic
editor extension or LSP tool would: Microsoft's vscode-jsonrpc (node) and pygls's
JsonRPCClient. Each sends an LSP-style `initialize` (no protocolVersion, fields rtrain does
not know), receives `$/progress` in its progress handlers and `run/log` as notifications,
cancels a request, and shuts down."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from rtrain.protocol import errors as e
from rtrain.protocol.version import PROTOCOL_VERSION
from tests.cli.leftovers import kill_marked
from tests.daemon_fixtures import DaemonEnv
from tests.required_tools import IN_CI, need

HERE = Path(__file__).parent
VSCODE_JSONRPC = HERE / "node_modules" / "vscode-jsonrpc"


class Scene:
    """What one client's whole run needs: a config, a workdir, two run ids, a fetch dest."""

    def __init__(self, root: Path, tag: str) -> None:
        self.tag = tag
        self.config = root / "config.yaml"
        self.config.write_text("steps: 2\n")
        self.workdir = root / "w"
        self.dest = root / "home"
        self.dest.mkdir()
        self.run_a = f"whole-{tag}"
        self.run_b = f"forever-{tag}"


@pytest.fixture
def scene(daemon_env: DaemonEnv, tmp_path: Path) -> Any:
    daemon_env.client().close()  # the daemon is up; the stock client only connects
    tag = uuid.uuid4().hex[:8]
    try:
        yield Scene(tmp_path, tag)
    finally:
        kill_marked(tag)


def assert_progress_in_lsp_shape(values: list[dict[str, Any]]) -> None:
    """What an LSP progress handler was given: each `value`, begin ... end, with the bytes."""
    assert values, "the progress handler was never called"
    kinds = [value["kind"] for value in values]
    assert kinds[0] == "begin" and kinds[-1] == "end" and set(kinds) <= {"begin", "report", "end"}
    assert values[0]["title"]
    end = values[-1]
    assert end["doneBytes"] == end["totalBytes"] > 0 and end["percentage"] == 100


def test_vscode_jsonrpc_drives_a_whole_run(daemon_env: DaemonEnv, scene: Scene) -> None:
    node = need("node")
    if not VSCODE_JSONRPC.is_dir():
        message = "vscode-jsonrpc is not installed (npm ci --prefix tests/conformance)"
        if IN_CI:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    done = subprocess.run(
        [
            node,
            str(HERE / "vscode_jsonrpc_run.mjs"),
            str(daemon_env.socket),
            str(scene.config),
            str(scene.workdir),
            str(scene.dest),
            scene.run_a,
            scene.run_b,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["initialize"]["protocolVersion"] == PROTOCOL_VERSION
    assert seen["initialize"]["serverInfo"]["name"] == "rtrain"
    assert seen["started"]["run"]["runId"] == scene.run_a
    assert_progress_in_lsp_shape(seen["progress"]["upload"])
    assert seen["logs"][scene.run_a] == "step 1\nstep 2\n"
    assert seen["tailed"]["run"]["state"] == "completed"
    assert_progress_in_lsp_shape(seen["progress"]["fetch"])
    assert (scene.dest / "model.bin").read_text() == "weights\n"
    assert seen["fetched"]["files"][0]["verified"] is True
    assert seen["logs"][scene.run_b] == "started\n"
    assert seen["cancelled"]["code"] == e.REQUEST_CANCELLED, seen["cancelled"]
    assert seen["stopped"]["outcome"] == "stopped"
    assert seen["unknownField"]["code"] == e.INVALID_PARAMS  # only initialize tolerates them
    assert seen["shutdown"] is None


def test_pygls_json_rpc_client_drives_a_whole_run(daemon_env: DaemonEnv, scene: Scene) -> None:
    try:
        from pygls.client import JsonRPCClient
        from pygls.exceptions import JsonRpcException
    except ImportError:
        if IN_CI:
            pytest.fail("pygls is not installed (pip install -e '.[dev]')", pytrace=False)
        pytest.skip("pygls is not installed (pip install -e '.[dev]')")
    asyncio.run(_pygls_whole_run(JsonRPCClient, JsonRpcException, daemon_env.socket, scene))


async def _pygls_whole_run(
    client_class: Any, rpc_exception: Any, socket_path: Path, scene: Scene
) -> None:
    client = client_class()
    progress: dict[str, list[dict[str, Any]]] = {"upload": [], "fetch": []}
    logs: dict[str, str] = {scene.run_a: "", scene.run_b: ""}
    b_spoke = asyncio.Event()

    @client.feature("$/progress")  # type: ignore[untyped-decorator]  # pygls leaves it bare
    def on_progress(params: Any) -> None:
        progress[params.token].append(as_dict(params.value))

    @client.feature("run/log")  # type: ignore[untyped-decorator]  # pygls leaves it bare
    def on_log(params: Any) -> None:
        logs[params.runId] += params.text
        if params.runId == scene.run_b:
            b_spoke.set()

    await client.start_io(sys.executable, str(HERE / "stdio_bridge.py"), str(socket_path))
    protocol = client.protocol
    try:
        lsp_initialize = {
            "processId": os.getpid(),
            "clientInfo": {"name": "pygls-conformance"},
            "rootUri": None,
            "capabilities": {},
        }
        answer = await protocol.send_request_async("initialize", lsp_initialize)
        assert as_dict(answer)["protocolVersion"] == PROTOCOL_VERSION
        protocol.notify("initialized", {})
        where = {"host": "local", "workdir": str(scene.workdir)}
        started = await protocol.send_request_async(
            "run/start",
            {
                **where,
                "config": str(scene.config),
                "runId": scene.run_a,
                "command": ["sh", "-c", "echo step 1; echo step 2; echo weights > model.bin"],
                "gpus": 0,
                "progressToken": "upload",
            },
        )
        assert as_dict(started)["run"]["runId"] == scene.run_a
        tailed = await protocol.send_request_async(
            "run/tail", {**where, "runId": scene.run_a, "follow": True}
        )
        assert as_dict(tailed)["run"]["state"] == "completed"
        assert logs[scene.run_a] == "step 1\nstep 2\n"
        assert_progress_in_lsp_shape(progress["upload"])
        fetch = {"runId": scene.run_a, "path": "model.bin", "dest": str(scene.dest)}
        await protocol.send_request_async("run/fetch", {**where, **fetch, "progressToken": "fetch"})
        assert (scene.dest / "model.bin").read_text() == "weights\n"
        assert_progress_in_lsp_shape(progress["fetch"])

        command = ["sh", "-c", "echo started; exec sleep 600"]
        start_b = {**where, "config": str(scene.config), "runId": scene.run_b, "command": command}
        await protocol.send_request_async("run/start", {**start_b, "gpus": 0})
        tail_id = f"tail-{scene.tag}"
        following = protocol.send_request_async(
            "run/tail", {**where, "runId": scene.run_b, "follow": True}, msg_id=tail_id
        )
        await asyncio.wait_for(b_spoke.wait(), 60)
        protocol.notify("$/cancelRequest", {"id": tail_id})
        with pytest.raises(rpc_exception) as cancelled:
            await asyncio.wait_for(following, 60)
        assert cancelled.value.code == e.REQUEST_CANCELLED
        stopped = await protocol.send_request_async(
            "run/stop", {**where, "runId": scene.run_b, "grace": 5}
        )
        assert as_dict(stopped)["outcome"] == "stopped"
        assert await protocol.send_request_async("shutdown") is None
        protocol.notify("exit")
    finally:
        await client.stop()


def as_dict(value: Any) -> Any:
    """pygls hands unknown messages' params over as namedtuple-like objects: as plain data."""
    if hasattr(value, "_asdict"):
        value = value._asdict()
    if isinstance(value, dict):
        return {key: as_dict(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_dict(item) for item in value]
    return value
