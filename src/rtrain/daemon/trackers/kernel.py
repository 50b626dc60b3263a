"""A Jupyter kernel that outlives the laptop (`rtrain kernel`, docs/trackers.md).

The kernel is a run like any other (started, listed, stopped and removed as one), whose
command is `PYTHON -m ipykernel_launcher -f RUN_DIR/kernel.json`: detached on the host, so
it lives on while the laptop sleeps. Its five ports are the host's 127.0.0.1; each is
forwarded here (daemon/forwards.py, tied to the run), and the client gets the connection
with this machine's ports in it. ZeroMQ reconnects by itself after a drop, and asking again
(`kernel/open` with the run id) opens whatever forward is missing and answers the same.

While a cell runs, the kernel keeps the file `kernel_busy` in its run dir (IPython's
pre_execute/post_execute events); the host's guard counts a kernel as busy only then, not
for merely being open (`rtrain-kernel` marks the run as a kernel).
"""

from __future__ import annotations

import asyncio
import time

import msgspec

from rtrain.daemon.forwards import Forwards
from rtrain.daemon.operations.context import DaemonState
from rtrain.daemon.operations.notifier import Notifier
from rtrain.daemon.operations.start import start
from rtrain.daemon.operations.status import status
from rtrain.daemon.remote.contract import run_scripts
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import (
    ForwardParams,
    KernelInfo,
    KernelParams,
    RunRef,
    StartParams,
)
from rtrain.protocol.run_states import is_ended

CONNECTION_FILE = "kernel.json"
PORTS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
# ipykernel imports IPython, and a busy host takes its time.
READY_S = 120.0
LOOK_S = 0.5
# Run at the kernel's start, in its namespace (then deleted from it): the marks the guard
# reads, by absolute path, so a cell's os.chdir does not move them.
MARKS = (
    "import os as _rk_os; "
    "_rk_busy = _rk_os.path.abspath('kernel_busy'); "
    "open('rtrain-kernel', 'w').close(); "
    "get_ipython().events.register('pre_execute', "
    "lambda _b=_rk_busy: open(_b, 'w').close()); "
    "get_ipython().events.register('post_execute', "
    "lambda _b=_rk_busy, _o=_rk_os: _o.path.exists(_b) and _o.remove(_b)); "
    "del _rk_os, _rk_busy"
)


def kernel_command() -> list[str]:
    """The run's command: ipykernel writing its connection file into the run dir."""
    return [
        "{python}",
        "-m",
        "ipykernel_launcher",
        "-f",
        f"{{run_dir}}/{CONNECTION_FILE}",
        f"--IPKernelApp.exec_lines={MARKS}",
    ]


async def open_kernel(
    ops: DaemonState, forwards: Forwards, p: KernelParams, ctx: Notifier
) -> KernelInfo:
    validation.host(p.host)
    started = p.run_id is None
    if p.run_id is None:
        begun = await start(
            ops,
            StartParams(
                host=p.host,
                command=kernel_command(),
                python=p.python,
                workdir=p.workdir,
                gpus=p.gpus,
                progress_token=p.progress_token,
            ),
            ctx,
        )
        run_id = begun.run.run_id
    else:
        run_id = validation.run_id(p.run_id)
        if p.python is not None:
            raise app_error(
                Kind.INVALID_COMMAND,
                "--python starts a new kernel; a kernel already started keeps its own.",
            )
    connection = await _connection(ops, p.host, run_id, p.workdir)
    local = await asyncio.gather(
        *(
            forwards.open(ForwardParams(host=p.host, remote_port=connection[port], run_id=run_id))
            for port in PORTS
        )
    )
    ports = {name: fwd.local_port for name, fwd in zip(PORTS, local, strict=True)}
    return KernelInfo(
        host=p.host,
        run_id=run_id,
        ip="127.0.0.1",
        key=str(connection.get("key", "")),
        transport=str(connection.get("transport", "tcp")),
        signature_scheme=str(connection.get("signature_scheme", "hmac-sha256")),
        kernel_name=str(connection.get("kernel_name", "")),
        started=started,
        **ports,
    )


async def _connection(
    ops: DaemonState, host: str, run_id: str, workdir: str | None
) -> dict[str, int]:
    """The kernel's connection file, once it has written it; or why it never will."""
    run_dir = ops.run_dir(host, run_id, workdir)
    deadline = time.monotonic() + READY_S
    while True:
        transport = await ops.transport(host)
        done = await run_scripts.exec_in_run(
            transport, run_dir, run_id, ["cat", CONNECTION_FILE], 30
        )
        if done.started and done.exit == 0:
            try:
                connection: dict[str, int] = msgspec.json.decode(done.stdout)
                if all(isinstance(connection.get(port), int) for port in PORTS):
                    return connection
            except msgspec.DecodeError:
                pass  # being written
        elif not done.started and done.error is not None:
            raise app_error(
                Kind.RUN_NOT_FOUND,
                f"There is no run {run_id} on {host} ({done.error}); `rtrain runs {host}` lists "
                "the ones there are.",
            )
        run = (await status(ops, RunRef(host=host, run_id=run_id, workdir=workdir))).run
        if is_ended(run.state):
            raise await _why_not(ops, host, run_id, run_dir, run.state, run.reason)
        if time.monotonic() > deadline:
            raise app_error(
                Kind.TIMEOUT,
                f"The kernel {run_id} on {host} wrote no connection file within {READY_S:g} s; "
                f"see `rtrain tail {host} {run_id}`.",
            )
        await asyncio.sleep(LOOK_S)


async def _why_not(
    ops: DaemonState, host: str, run_id: str, run_dir: str, state: str, reason: str | None
) -> RpcError:
    transport = await ops.transport(host)
    done = await run_scripts.exec_in_run(
        transport, run_dir, run_id, ["tail", "-n", "3", "train.log"], 30
    )
    said = done.stdout.decode(errors="replace").strip() if done.started else ""
    if "No module named ipykernel" in said:
        return app_error(
            Kind.HOST_NOT_READY,
            f"The kernel's python on {host} has no ipykernel; install it there "
            "(PYTHON -m pip install ipykernel), or name one that has it with --python.",
        )
    last = said.splitlines()[-1] if said else (reason or "no output")
    return app_error(Kind.REMOTE_FAILED, f"The kernel {run_id} on {host} is {state}: {last}")
