"""One TensorBoard per host, serving the runs asked for (`rtrain tensorboard`, docs/trackers.md).

TensorBoard cannot add a log directory while it runs, so a change of the runs it serves
starts it again with the new spec (`--logdir_spec RUN:DIR,...`): a second or two, and the
browser tab keeps its URL, because the forward here is kept on the same local port. It runs
as a detached session through launch.sh like a run, in `WORKDIR/.tensorboard/tensorboard/`:
outside the run dirs the guard counts (a TensorBoard being read is no training), under one
fixed name so that a later daemon finds and replaces it, and stopped by stop.sh like any run.
It ends with the last run it serves (`rtrain rm`, `--stop`).
"""

from __future__ import annotations

import asyncio
import logging
import posixpath
import shlex
import time
from dataclasses import dataclass, field

import msgspec

from rtrain.daemon.forwards import Forwards
from rtrain.daemon.operations.context import DaemonState
from rtrain.daemon.operations.run_proof import refuse_unless_run
from rtrain.daemon.remote.contract import launch_scripts, run_scripts

# The nodes launcher's free-port script: a port of the host free a moment ago.
from rtrain.daemon.remote.contract.port_scripts import free_port
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import (
    ForwardCloseParams,
    ForwardParams,
    RunInfo,
    TensorBoardInfo,
    TensorBoardParams,
    TensorBoardStopParams,
    TensorBoardStopResult,
)
from rtrain.protocol.run_states import is_ended

log = logging.getLogger(__name__)

SERVICE_DIR = ".tensorboard"
SERVICE_ID = "tensorboard"
# TensorBoard imports in a few seconds on an idle host; a busy one or a slow disk takes longer.
READY_S = 120.0
LOOK_S = 0.5


@dataclass
class Served:
    """A host's TensorBoard as this daemon started it."""

    python: str
    workdir: str  # the host's work directory; the TensorBoard lives under it
    remote_port: int
    local_port: int | None = None
    # run id -> the directory it reads, in the order they were asked for
    runs: dict[str, str] = field(default_factory=dict)

    def info(self, host: str) -> TensorBoardInfo:
        assert self.local_port is not None
        return TensorBoardInfo(
            host=host,
            url=f"http://127.0.0.1:{self.local_port}/",
            local_port=self.local_port,
            remote_port=self.remote_port,
            runs=list(self.runs),
            python=self.python,
        )


class TensorBoards:
    def __init__(self, ops: DaemonState, forwards: Forwards) -> None:
        self.ops = ops
        self.forwards = forwards
        self._served: dict[str, Served] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def open(self, p: TensorBoardParams) -> TensorBoardInfo:
        validation.host(p.host)
        validation.run_id(p.run_id)
        logdir = _logdir(p.logdir)
        run = self.ops.known(p.host, p.run_id)
        if run is None:
            raise app_error(
                Kind.RUN_NOT_FOUND,
                f"rtrain knows of no run {p.run_id} on {p.host}; `rtrain runs {p.host}` lists "
                "the ones it does.",
            )
        run_dir = self.ops.run_dir(p.host, p.run_id, p.workdir)
        read = run_dir if logdir == "." else f"{run_dir}/{logdir}"
        async with self._lock(p.host):
            transport = await self.ops.transport(p.host)
            served = self._served.get(p.host) or await self._adopt(
                p.host, transport, posixpath.dirname(run_dir)
            )
            if served is not None and served.runs.get(p.run_id) == read:
                await self._forward(p.host, served, p.local_port)
                return served.info(p.host)
            python = await _run_python(transport, run_dir, p.run_id, run)
            runs = dict(served.runs) if served is not None else {}
            runs[p.run_id] = read
            local = p.local_port or (served.local_port if served else None)
            workdir = served.workdir if served else posixpath.dirname(run_dir)
            served = await self._restart(p.host, transport, workdir, python, runs, local)
            return served.info(p.host)

    async def stop(self, p: TensorBoardStopParams) -> TensorBoardStopResult:
        validation.host(p.host)
        if p.run_id is not None:
            validation.run_id(p.run_id)
        async with self._lock(p.host):
            served = self._served.get(p.host)
            if p.run_id is not None and (served is None or p.run_id not in served.runs):
                raise app_error(
                    Kind.RUN_NOT_FOUND,
                    f"The TensorBoard of {p.host} serves no run {p.run_id}"
                    + (f" (it serves {', '.join(served.runs)})." if served else "."),
                )
            left = await self._without(p.host, p.run_id)
        return TensorBoardStopResult(tensorboard=left.info(p.host) if left else None)

    def run_removed(self, run: RunInfo) -> None:
        """`rtrain rm`: the TensorBoard serves the run no more, and ends with its last run;
        one a daemon started before this one is found by its meta.json."""
        served = self._served.get(run.host)
        if served is None or run.run_id in served.runs:
            asyncio.get_running_loop().create_task(self._drop(run))

    async def _drop(self, run: RunInfo) -> None:
        async with self._lock(run.host):
            try:
                served = self._served.get(run.host)
                if served is None and run.remote_dir:
                    transport = await self.ops.transport(run.host)
                    workdir = posixpath.dirname(run.remote_dir)
                    served = await self._adopt(run.host, transport, workdir)
                if served is None or run.run_id not in served.runs:
                    return
                await self._without(run.host, run.run_id)
            except RpcError as error:
                log.warning("%s: the TensorBoard was not restarted: %s", run.host, error)

    async def _adopt(self, host: str, transport: Transport, workdir: str) -> Served | None:
        """The TensorBoard an earlier daemon left running in `workdir`, from its meta.json
        (the command it runs); None when there is none, or it has ended."""
        run_dir = f"{workdir}/{SERVICE_DIR}/{SERVICE_ID}"
        report = await run_scripts.status(transport, posixpath.dirname(run_dir), [SERVICE_ID])
        row = report.runs.get(SERVICE_ID)
        if row is None or row.state != "running":
            return None
        done = await run_scripts.exec_in_run(
            transport, run_dir, SERVICE_ID, ["cat", "meta.json"], 30
        )
        try:
            command = msgspec.json.decode(done.stdout).get("command") if done.started else None
            words = [str(word) for word in command] if isinstance(command, list) else []
            spec = words[words.index("--logdir_spec") + 1]
            port = int(words[words.index("--port") + 1])
        except (msgspec.DecodeError, AttributeError, ValueError, IndexError):
            return None
        runs = dict(pair.split(":", 1) for pair in spec.split(",") if ":" in pair)
        served = Served(words[0], workdir, port, None, runs)
        self._served[host] = served
        log.info("%s: found the TensorBoard an earlier daemon started (%s)", host, spec)
        return served

    async def _without(self, host: str, run_id: str | None) -> Served | None:
        """Serve every run but `run_id` (None: none); stop it when none is left."""
        served = self._served.get(host)
        runs = {k: v for k, v in (served.runs if served else {}).items() if k != run_id}
        if run_id is not None and runs and served is not None:
            transport = await self.ops.transport(host)
            return await self._restart(
                host, transport, served.workdir, served.python, runs, served.local_port
            )
        transport = await self.ops.transport(host)
        workdir = served.workdir if served else self.ops.host_workdir(host, None)
        await self._end(host, transport, workdir)
        return None

    async def _restart(
        self,
        host: str,
        transport: Transport,
        workdir: str,
        python: str,
        runs: dict[str, str],
        local_port: int | None,
    ) -> Served:
        """(Re)start the host's TensorBoard in `workdir` (the first run's) over `runs`."""
        await self._end(host, transport, workdir, keep_forward=True)
        port = await free_port(transport, python)
        if port.port is None:
            raise app_error(
                Kind.REMOTE_FAILED,
                f"{host}: no free port for TensorBoard: {' '.join(port.error) or port.error_text}",
            )
        service_workdir = f"{workdir}/{SERVICE_DIR}"
        prepared = await launch_scripts.prepare(transport, service_workdir, SERVICE_ID)
        if prepared.run_dir is None:
            raise app_error(
                Kind.REMOTE_FAILED,
                f"{host}: cannot make {service_workdir}/{SERVICE_ID}: {prepared.error_text}",
            )
        spec = ",".join(f"{run_id}:{path}" for run_id, path in runs.items())
        command = [
            python,
            "-m",
            "tensorboard.main",
            "--logdir_spec",
            spec,
            "--host",
            "127.0.0.1",
            "--port",
            str(port.port),
        ]
        meta = {"purpose": "tensorboard", "runs": list(runs)}
        secrets = launch_scripts.launch_stdin({}, {}, None, meta)
        launched = await launch_scripts.launch(
            transport, prepared.run_dir, SERVICE_ID, python, command, secrets
        )
        if launched.pid is None:
            raise app_error(
                Kind.REMOTE_FAILED,
                f"{host}: TensorBoard did not start: {launched.error or launched.error_text}",
            )
        served = Served(python, workdir, port.port, local_port, runs)
        self._served[host] = served
        await self._ready(host, transport, prepared.run_dir, served, local_port)
        log.info("%s: TensorBoard on port %d serves %s", host, port.port, ", ".join(runs))
        return served

    async def _ready(
        self,
        host: str,
        transport: Transport,
        run_dir: str,
        served: Served,
        local_port: int | None,
    ) -> None:
        """Wait until it listens (forwarded here), or say why it ended."""
        deadline = time.monotonic() + READY_S
        while True:
            try:
                await self._forward(host, served, local_port)
                return
            except RpcError as error:
                if error.kind != Kind.PORT_NOT_LISTENING:
                    raise
            report = await run_scripts.status(transport, posixpath.dirname(run_dir), [SERVICE_ID])
            row = report.runs.get(SERVICE_ID)
            if row is not None and (row.state == "missing" or is_ended(row.state)):
                del self._served[host]
                raise await _ended(host, transport, run_dir, served.python)
            if time.monotonic() > deadline:
                await self._end(host, transport, served.workdir)
                raise app_error(
                    Kind.TIMEOUT,
                    f"TensorBoard on {host} did not listen within {READY_S:g} s; its log is "
                    f"{run_dir}/train.log there.",
                )
            await asyncio.sleep(LOOK_S)

    async def _forward(self, host: str, served: Served, local_port: int | None) -> None:
        info = await self.forwards.open(
            ForwardParams(host=host, remote_port=served.remote_port, local_port=local_port)
        )
        served.local_port = info.local_port

    async def _end(
        self, host: str, transport: Transport, workdir: str, keep_forward: bool = False
    ) -> None:
        """Stop and remove the host's TensorBoard, whoever started it; its forward too."""
        served = self._served.pop(host, None)
        if served is not None and served.local_port is not None and not keep_forward:
            await self.forwards.close(ForwardCloseParams(local_port=served.local_port))
        elif served is not None:
            # The local port stays ours: a new far port behind the same URL.
            await self.forwards.close(ForwardCloseParams(host=host, remote_port=served.remote_port))
        run_dir = f"{workdir}/{SERVICE_DIR}/{SERVICE_ID}"
        stopped = await run_scripts.stop(transport, run_dir, SERVICE_ID, 5.0, True)
        refuse_unless_run(stopped, host, SERVICE_ID, run_dir, "nothing was stopped")
        if stopped.outcome not in ("stopped", "not_running"):
            raise app_error(
                Kind.REMOTE_FAILED,
                f"{host}: the TensorBoard did not stop ({stopped.outcome or stopped.error_text}).",
            )
        removed = await run_scripts.remove(transport, run_dir, SERVICE_ID)
        if not removed.ok and removed.had_dir:
            log.warning("%s: the TensorBoard's directory stays: %s", host, removed.error_text)

    def _lock(self, host: str) -> asyncio.Lock:
        return self._locks.setdefault(host, asyncio.Lock())


def _logdir(value: str | None) -> str:
    if value is None:
        return "."
    path = validation.fetch_path(value)
    if any(c in path for c in ",:") or not all(c.isprintable() for c in path):
        raise app_error(
            Kind.INVALID_PATH,
            f"--logdir {value!r} cannot hold a comma or a colon (TensorBoard's logdir spec "
            "separates runs with them).",
        )
    return path


async def _run_python(transport: Transport, run_dir: str, run_id: str, run: RunInfo) -> str:
    """The python the run's meta.json names (the run's environment), else python3."""
    # rtrain's record in .rtrain/; beside the trainer's files for an older run.
    read = "cat .rtrain/meta.json 2>/dev/null || cat meta.json"
    done = await run_scripts.exec_in_run(transport, run_dir, run_id, ["sh", "-c", read], 30)
    if done.started and done.exit == 0:
        try:
            meta = msgspec.json.decode(done.stdout)
        except msgspec.DecodeError:
            meta = {}
        python = meta.get("python") if isinstance(meta, dict) else None
        if isinstance(python, str) and python:
            return python
    return "python3"


async def _ended(host: str, transport: Transport, run_dir: str, python: str) -> RpcError:
    """Why TensorBoard ended at once: its log's last line, in a sentence."""
    done = await run_scripts.exec_in_run(
        transport, run_dir, SERVICE_ID, ["tail", "-n", "3", "train.log"], 30
    )
    last = done.stdout.decode(errors="replace").strip().splitlines() if done.started else []
    said = last[-1] if last else "no output"
    if "No module named" in said and "tensorboard" in said:
        return app_error(
            Kind.HOST_NOT_READY,
            f"The run's python on {host} ({python}) has no tensorboard; install it there: "
            f"{shlex.quote(python)} -m pip install tensorboard",
        )
    return app_error(Kind.REMOTE_FAILED, f"TensorBoard on {host} ended at once: {said}")
