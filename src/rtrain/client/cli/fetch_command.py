"""`rtrain fetch`: copy a run's files home, verified."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.client.errors import Interrupted
from rtrain.protocol import requests, validation
from rtrain.protocol.byte_sizes import human_bytes
from rtrain.protocol.errors import RpcError

from .exit_codes import ClientKind
from .input_checks import check
from .output import fail, friendly_errors, note, print_json
from .progress import ProgressBar
from .shared_options import HostArg, JsonOpt, NodeOpt, RunArg, WorkdirOpt


def _fetch_interrupted(out: Path, progress: list[Any]) -> str:
    """What a fetch cancelled by Ctrl-C kept, and what not."""
    sofar = ""
    if progress and progress[0].total_bytes and progress[0].done_bytes:
        done, total = progress[0].done_bytes, progress[0].total_bytes
        sofar = f" (about {human_bytes(done)} of {human_bytes(total)} had arrived)"
    kept = out / ".rtrain-partial"
    again = (
        f"it resumes from the verified pieces kept in {kept}."
        if kept.is_dir()
        else "no piece of the one on its way had arrived whole, so it starts that one afresh."
    )
    return (
        f"interrupted: the fetch was cancelled{sofar}. The files that had arrived are in "
        f"{out} and verified; nothing is under the name of the one on its way. Run the same "
        f"fetch again for the rest: {again}"
    )


@friendly_errors
def fetch(
    host: str = HostArg,
    run_id: str = RunArg,
    path: str = typer.Argument(
        ..., metavar="PATH", help="File or directory inside the run directory."
    ),
    out: Path = typer.Option(Path("."), "--out", "-o", help="Local directory to copy into."),
    force: bool = typer.Option(
        False, "--force", help="Fetch every file again, even those already here unchanged."
    ),
    node: int | None = NodeOpt,
    workdir: str | None = WorkdirOpt,
    json: bool = JsonOpt,
) -> None:
    """Copy a file or directory of a run home; every file's sha256 is checked (a run
    across hosts: node 0's, or --node K's)."""
    check(host=host, run_id=run_id, workdir=workdir)
    try:
        validation.fetch_path(path)
    except RpcError as error:
        fail(error.message, kind=error.kind or ClientKind.USAGE)
    call = requests.run_fetch(
        host=host,
        run_id=run_id,
        path=path,
        dest=str(out.resolve()),
        workdir=workdir or None,
        force=force or None,
        node=node,
        progress_token="fetch",
    )
    bar = ProgressBar(None if not json else False)
    arrived: list[Any] = []  # the last progress, to say how far it got

    def on_progress(method: str, progress: Any) -> None:
        bar.update(progress)
        arrived[:] = [progress.value]

    with DaemonClient.connect() as client:
        try:
            result = client.call(call, on_notification=on_progress, cancel_on_interrupt=True)
        except Interrupted as interrupted:
            bar.clear()
            if interrupted.result is None:
                fail(_fetch_interrupted(out, arrived), kind=ClientKind.INTERRUPTED)
            result = interrupted.result  # it had finished: say so as usual
        finally:
            bar.clear()
    if json:
        print_json(result)
        return
    cwd = Path.cwd()
    for f in result.files:
        local = Path(f.local_path)
        shown = local.relative_to(cwd) if local.is_relative_to(cwd) else local
        print(f"  {shown}  {human_bytes(f.size)}  sha256 {'ok' if f.verified else 'BAD'}")
    skipped = (
        f" ({result.skipped} already here, unchanged: not sent again)" if result.skipped else ""
    )
    note(
        f"fetched {len(result.files)} file(s), {human_bytes(result.total_bytes)}, "
        f"all checksums matched{skipped}"
    )
