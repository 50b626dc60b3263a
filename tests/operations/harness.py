"""The tests' handle on one isolated daemon and the test hosts (see conftest.py's `ops`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rtrain.client.daemon_client import DaemonClient
from rtrain.client.errors import RemoteError
from rtrain.protocol.requests import Call
from tests.daemon_fixtures import DaemonEnv
from tests.hosts import GPU_USER, TestHosts
from tests.operations.processes import marked_pids, process_gone, ssh_processes

# Only to stop a broken test from hanging; a healthy one finishes far sooner.
WAIT_S = 30.0


@dataclass
class LogCollector:
    """The `run/log` notifications of one tail, in arrival order."""

    chunks: list[Any] = field(default_factory=list)

    def __call__(self, method: str, params: Any) -> None:
        if method == "run/log":
            self.chunks.append(params)

    @property
    def data(self) -> bytes:
        return "".join(chunk.text for chunk in self.chunks).encode()


class RequestInThread:
    """One request on a client connection of its own, in a thread, so that the test can act
    while it runs (kill the daemon, cut the link, write to the log). Whatever it raises is
    kept in `error` for the test to judge; `run/log` chunks are kept in `chunks`."""

    def __init__(self, client: DaemonClient, method: str, params: dict[str, Any]) -> None:
        self.client = client
        self.chunks = LogCollector()
        self.got_chunk = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(method, params), daemon=True)
        self._thread.start()

    def _on(self, method: str, params: Any) -> None:
        self.chunks(method, params)
        if method == "run/log":
            self.got_chunk.set()

    def _run(self, method: str, params: dict[str, Any]) -> None:
        try:
            call: Call[Any] = Call(method, params)  # any method: the wire's own call
            self.result = self.client.call(call, on_notification=self._on)
        except BaseException as error:  # handed to the test
            self.error = error

    def wait_for(self, condition: Callable[[], bool]) -> None:
        deadline = time.monotonic() + WAIT_S
        while not condition():
            assert self._thread.is_alive() or condition(), self.error
            assert time.monotonic() < deadline, "the request made no progress"
            time.sleep(0.02)

    def join(self, timeout: float = WAIT_S * 2) -> Any:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the request never finished"
        return self.result


@dataclass
class Ops:
    """One test's view: its daemon, the hosts, its remote workdir and run ids."""

    daemon: DaemonEnv
    hosts: TestHosts
    tmp: Path
    tag: str
    clients: list[DaemonClient] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)

    @property
    def workdir(self) -> str:
        """The workdir as the user writes it: expanded by the remote shell."""
        return f"~/.rtrain-t/{self.tag}"

    @property
    def home(self) -> Path:
        return self.hosts.home(GPU_USER)

    @property
    def far_workdir(self) -> Path:
        """The same workdir as root sees it on this machine."""
        return self.home / ".rtrain-t" / self.tag

    @property
    def local_workdir(self) -> Path:
        """The workdir on the embedded `local` host (this user's home)."""
        return Path.home() / ".rtrain-t" / self.tag

    def far_run_dir(self, run_id: str) -> Path:
        return self.far_workdir / run_id

    def client(self) -> DaemonClient:
        client = DaemonClient.connect(name="rtrain-tests", timeout=120)
        self.clients.append(client)
        return client

    def request(self, method: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
        client = self.clients[0] if self.clients else self.client()
        call: Call[Any] = Call(method, params or {})  # any method: the wire's own call
        return client.call(call, **kw)

    def kill_daemon(self) -> int:
        """`kill -9` the daemon and wait until it is gone; the next client starts a new one."""
        for client in self.clients:
            client.close()
        self.clients.clear()
        [daemon] = self.daemon.daemon_pids()
        os.kill(daemon, signal.SIGKILL)
        deadline = time.monotonic() + WAIT_S
        while not process_gone(daemon):
            assert time.monotonic() < deadline, "the daemon survived kill -9"
            time.sleep(0.02)
        return daemon

    def end_processes(self) -> None:
        """Close the clients, and kill whatever this test's runs left behind: runs that
        ignore SIGTERM or escaped their session must not outlive the test."""
        for client in self.clients:
            client.close()
        for pid in marked_pids(lambda marker: self.tag in marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def remove_workdirs(self) -> None:
        """The far workdir, and the one on the embedded `local` host (this user's home)."""
        shutil.rmtree(self.far_workdir, ignore_errors=True)
        shutil.rmtree(self.local_workdir, ignore_errors=True)

    def new_run_id(self, name: str = "run") -> str:
        run_id = f"{name}-{self.tag}-{len(self.run_ids)}"
        self.run_ids.append(run_id)
        return run_id

    def file(self, name: str, text: str) -> Path:
        path = self.tmp / name
        path.write_text(text)
        return path

    def start(
        self,
        code: str | None = None,
        *,
        run_id: str | None = None,
        host: str = "plain",
        **params: Any,
    ) -> Any:
        """run/start of `python -c CODE` (or the given params) in this test's workdir."""
        run_id = run_id or self.new_run_id()
        params.setdefault("config", str(self.file("config.yaml", "epochs: 1\n")))
        if code is not None:
            params.setdefault("command", ["{python}", "-c", code])
        return self.request(
            "run/start",
            {"host": host, "runId": run_id, "workdir": self.workdir, "gpus": 0, **params},
        )

    def status(self, run_id: str, host: str = "plain") -> Any:
        return self.request("run/status", {"host": host, "runId": run_id}).run

    def wait_state(self, run_id: str, done: Callable[[Any], bool], host: str = "plain") -> Any:
        deadline = time.monotonic() + WAIT_S
        while True:
            run = self.status(run_id, host)
            if done(run):
                return run
            assert time.monotonic() < deadline, f"run stuck in {run}"
            time.sleep(0.1)

    def wait_file(self, path: Path, predicate: Callable[[str], bool] = bool) -> str:
        """Wait until the far-side file exists and its text satisfies `predicate`."""
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                text = path.read_text(errors="replace")
            except FileNotFoundError:
                text = None
            if text is not None and predicate(text):
                return text
            assert time.monotonic() < deadline, f"{path} never got there: {text!r}"
            time.sleep(0.05)

    def tail(
        self, run_id: str, offset: int = 0, host: str = "plain", **params: Any
    ) -> tuple[Any, LogCollector]:
        chunks = LogCollector()
        result = self.request(
            "run/tail",
            {"host": host, "runId": run_id, "offset": offset, **params},
            on_notification=chunks,
        )
        return result, chunks

    def error(self, method: str, params: dict[str, Any]) -> RemoteError:
        with pytest.raises(RemoteError) as caught:
            self.request(method, params)
        return caught.value


def master_pids(ops: Ops) -> list[int]:
    """Live ControlMaster processes (`ssh ... -N`) of this test's daemon."""
    prefix = f"ControlPath={ops.daemon.runtime}/"
    return [
        pid
        for pid, argv in ssh_processes().items()
        if "-N" in argv and any(word.startswith(prefix) for word in argv)
    ]


def daemon_ssh_pids(ops: Ops) -> list[int]:
    """Every ssh process this test's daemon started (masters and commands)."""
    prefix = f"ControlPath={ops.daemon.runtime}/"
    return [
        pid
        for pid, argv in ssh_processes().items()
        if any(word.startswith(prefix) for word in argv)
    ]
