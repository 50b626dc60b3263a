"""Benchmark 3: the RPC core alone. `daemon/info` (no I/O behind it) over the Unix socket,
1 and 16 clients, the rtrain daemon against a pygls server answering the same request.

Rounds alternate between the two servers, so both see the same machine; each figure is the
median over rounds of that round's requests per second, p50 and p99 latency.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.sample import Sample
from rtrain.protocol.version import PROTOCOL_VERSION, RTRAIN_VERSION

REPO = Path(__file__).resolve().parent.parent
RTRAIN, PYGLS = "rtrain daemon", "pygls"
CLIENT_COUNTS = (1, 16)


@dataclass
class RpcFigures:
    server: str
    clients: int
    per_second: Sample = field(default_factory=Sample)
    p50_ms: Sample = field(default_factory=Sample)
    p99_ms: Sample = field(default_factory=Sample)


class PyglsServer:
    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="rtb-pygls-", dir="/tmp"))
        self.socket_path = self.directory / "pygls.sock"
        self._process = subprocess.Popen(
            [sys.executable, "-m", "bench.pygls_server", str(self.socket_path)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        if self._process.stdout.readline().strip() != "ready":
            self.close()
            raise RuntimeError("the pygls server did not start")

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            self._process.wait(10)
        self.socket_path.unlink(missing_ok=True)
        self.directory.rmdir()


def _load(
    socket_path: Path, clients: int, seconds: float, init: dict[str, object]
) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.rpc_load", str(socket_path), str(clients), str(seconds),
         json.dumps(init)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=seconds + 60,
        check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"the RPC load failed: {done.stderr.strip()[-600:]}")
    figures: dict[str, float] = json.loads(done.stdout)
    return figures


def run_rpc_bench(rtrain_socket: Path, seconds: float, rounds: int) -> list[RpcFigures]:
    rtrain_init: dict[str, object] = {
        "protocolVersion": PROTOCOL_VERSION,
        "clientInfo": {"name": "rtrain-bench", "version": RTRAIN_VERSION},
        "processId": os.getpid(),
    }
    pygls_init: dict[str, object] = {
        "processId": os.getpid(),
        "rootUri": None,
        "capabilities": {},
        "clientInfo": {"name": "rtrain-bench"},
    }
    results = {
        (server, clients): RpcFigures(server, clients)
        for clients in CLIENT_COUNTS
        for server in (RTRAIN, PYGLS)
    }
    pygls = PyglsServer()
    try:
        targets = {RTRAIN: (rtrain_socket, rtrain_init), PYGLS: (pygls.socket_path, pygls_init)}
        for round_index in range(rounds):
            for clients in CLIENT_COUNTS:
                order = [RTRAIN, PYGLS] if round_index % 2 == 0 else [PYGLS, RTRAIN]
                for server in order:
                    socket_path, init = targets[server]
                    figures = _load(socket_path, clients, seconds, init)
                    entry = results[(server, clients)]
                    entry.per_second.add(figures["per_second"])
                    entry.p50_ms.add(figures["p50_s"] * 1000)
                    entry.p99_ms.add(figures["p99_s"] * 1000)
                    time.sleep(0.2)  # let the server settle between rounds
    finally:
        pygls.close()
    return list(results.values())
