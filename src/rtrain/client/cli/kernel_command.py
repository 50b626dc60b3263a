"""`rtrain kernel`: a Jupyter kernel on a host that outlives this machine, and the connection
file a notebook here attaches with (docs/trackers.md)."""

from __future__ import annotations

import json as json_module
import os
from pathlib import Path
from typing import Any

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.protocol import requests

from .exit_codes import Exit
from .input_checks import check
from .output import fail, friendly_errors, note, print_json
from .shared_options import HostArg, JsonOpt, WorkdirOpt

CONNECTION_FIELDS = (
    "shell_port",
    "iopub_port",
    "stdin_port",
    "control_port",
    "hb_port",
    "ip",
    "key",
    "transport",
    "signature_scheme",
    "kernel_name",
)


@friendly_errors
def kernel(
    host: str = HostArg,
    run: str | None = typer.Argument(
        None, metavar="[RUN]", help="A kernel started before: attach to it again."
    ),
    python: str | None = typer.Option(
        None, "--python", help="The host's python with ipykernel (a new kernel only)."
    ),
    gpus: int = typer.Option(1, "--gpus", min=0, help="GPUs the kernel claims (a new kernel)."),
    connection_file: Path | None = typer.Option(
        None,
        "--connection-file",
        "-f",
        metavar="FILE",
        help="Write the connection file here (default: Jupyter's runtime directory).",
    ),
    workdir: str | None = WorkdirOpt,
    json: bool = JsonOpt,
) -> None:
    """Start a Jupyter kernel on HOST as a detached run (or attach to RUN, one started
    before), forward its ports here, and write the connection file a notebook attaches
    with. The kernel lives on while this machine sleeps; `rtrain stop HOST RUN` ends it."""
    check(host=host, run_id=run, python=python, workdir=workdir)
    if run is not None and python is not None:
        fail("--python starts a new kernel; leave it out to attach to RUN.", code=Exit.BAD_INPUT)
    with DaemonClient.connect() as client:
        info = client.call(
            requests.kernel_open(host=host, run_id=run, python=python, workdir=workdir, gpus=gpus)
        )
    connection = {name: getattr(info, name) for name in CONNECTION_FIELDS}
    path = connection_file or _runtime_dir() / f"kernel-rtrain-{host}-{info.run_id}.json"
    _write_private(path, connection)
    if json:
        print_json({"runId": info.run_id, "started": info.started, "connectionFile": str(path)})
        return
    print(path)
    how = "started" if info.started else "attached to"
    note(
        f"{how} kernel {info.run_id} on {host}; in VS Code or Jupyter, connect to the existing "
        f"kernel with {path} (jupyter console --existing {path}); again later: "
        f"rtrain kernel {host} {info.run_id}; end it: rtrain stop {host} {info.run_id}"
    )


def _runtime_dir() -> Path:
    """Jupyter's runtime directory, where its tools look for kernels' connection files."""
    chosen = os.environ.get("JUPYTER_RUNTIME_DIR")
    if chosen:
        return Path(chosen)
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "jupyter" / "runtime"


def _write_private(path: Path, connection: dict[str, Any]) -> None:
    """The file holds the key that signs every message: this user's alone (0600)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.tmp")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json_module.dump(connection, out, indent=1)
        os.replace(partial, path)
    except OSError as error:
        fail(
            f"Cannot write the connection file {path}: {error.strerror}; choose another place "
            "with --connection-file (the kernel runs on; attach again with the same command).",
            code=Exit.FAILED,
        )
