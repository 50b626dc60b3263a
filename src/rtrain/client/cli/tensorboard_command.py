"""`rtrain tensorboard`: the host's one TensorBoard over a run's logs, forwarded here
(docs/trackers.md)."""

from __future__ import annotations

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.protocol import requests

from .exit_codes import Exit
from .input_checks import check
from .output import fail, friendly_errors, note, print_json
from .shared_options import HostArg, JsonOpt, WorkdirOpt


@friendly_errors
def tensorboard(
    host: str = HostArg,
    run: str | None = typer.Argument(
        None, metavar="[RUN]", help="The run to show (the host's TensorBoard serves several)."
    ),
    logdir: str | None = typer.Option(
        None,
        "--logdir",
        metavar="DIR",
        help="The run's folder TensorBoard reads (relative to the run; default: all of it).",
    ),
    local: int | None = typer.Option(
        None,
        "--local",
        metavar="PORT",
        help="Listen on this port of 127.0.0.1 here (default: TensorBoard's own if free).",
    ),
    open_: bool = typer.Option(False, "--open", help="Open the URL in the browser too."),
    stop: bool = typer.Option(
        False, "--stop", help="Stop showing RUN; without RUN, end the host's TensorBoard."
    ),
    workdir: str | None = WorkdirOpt,
    json: bool = JsonOpt,
) -> None:
    """Start (or reuse) TensorBoard on HOST over RUN's directory, with the run's python, and
    print the local URL. It ends with the last run it shows (`rtrain rm`, or --stop)."""
    check(host=host, run_id=run, workdir=workdir)
    if local is not None and not 1 <= local <= 65535:
        fail(f"--local must be a port number from 1 to 65535, not {local}.", code=Exit.BAD_INPUT)
    if stop:
        if logdir is not None or local is not None or open_:
            fail("--stop takes no --logdir, --local or --open.", code=Exit.BAD_INPUT)
        with DaemonClient.connect() as client:
            left = client.call(requests.tensorboard_stop(host=host, run_id=run)).tensorboard
        if json:
            print_json({"tensorboard": left})
        elif left is None:
            note(f"the TensorBoard of {host} has ended")
        else:
            note(f"the TensorBoard of {host} shows {', '.join(left.runs)} at {left.url}")
        return
    if run is None:
        fail(
            "name the RUN to show, or give --stop to end the host's TensorBoard.",
            code=Exit.BAD_INPUT,
        )
    with DaemonClient.connect() as client:
        info = client.call(
            requests.tensorboard_open(
                host=host, run_id=run, workdir=workdir, logdir=logdir, local_port=local
            )
        )
    if json:
        print_json(info)
    else:
        print(info.url)
        note(
            f"TensorBoard on {host} shows {', '.join(info.runs)} at {info.url}; end it with: "
            f"rtrain tensorboard {host} --stop"
        )
    if open_:
        import webbrowser

        if not webbrowser.open(info.url):
            note(f"no browser could be started here; open {info.url} yourself")
