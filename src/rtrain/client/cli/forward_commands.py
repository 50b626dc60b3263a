"""`rtrain forward` and `rtrain forwards`: reach a port on a host (TensorBoard, Jupyter, a dev
server) from this machine, over the host's ssh connection (docs/cli.md)."""

from __future__ import annotations

from typing import Any

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.protocol import requests

from .describe import table, when
from .exit_codes import Exit
from .input_checks import check
from .output import fail, friendly_errors, note, print_json
from .shared_options import HostArg, JsonOpt
from .terminal_text import safe_for_terminal


def _port(value: int | None, what: str) -> int | None:
    if value is not None and not 1 <= value <= 65535:
        fail(f"{what} must be a port number from 1 to 65535, not {value}.", code=Exit.BAD_INPUT)
    return value


@friendly_errors
def forward(
    host: str = HostArg,
    port: int = typer.Argument(
        ..., metavar="PORT", help="The port on HOST (its 127.0.0.1) to reach."
    ),
    local: int | None = typer.Option(
        None,
        "--local",
        metavar="PORT",
        help="Listen on this port of 127.0.0.1 here (default: PORT if free, else any).",
    ),
    run: str | None = typer.Option(
        None,
        "--run",
        metavar="RUN",
        help="The run the forward belongs to: it ends when the run is removed.",
    ),
    stop: bool = typer.Option(False, "--stop", help="End the forwards to HOST's PORT."),
    reverse: bool = typer.Option(
        False,
        "--reverse",
        help="The other way: HOST's processes reach PORT of this machine (a server here).",
    ),
    remote: int | None = typer.Option(
        None,
        "--remote",
        metavar="PORT",
        help="With --reverse: listen on this port of HOST's 127.0.0.1 (default: PORT if free "
        "there, else any).",
    ),
    json: bool = JsonOpt,
) -> None:
    """Reach PORT on HOST from this machine: prints the local URL. The forward lasts as
    long as the daemon, and comes back by itself when the connection to HOST does. With
    --reverse, HOST's processes reach PORT of this machine: prints the address to use there."""
    check(host=host, run_id=run)
    _port(port, "PORT")
    _port(local, "--local")
    _port(remote, "--remote")
    if reverse:
        if local is not None:
            fail("--reverse takes --remote for HOST's port, not --local.", code=Exit.BAD_INPUT)
        _reverse(host, port, remote, run, stop, json)
        return
    if remote is not None:
        fail("--remote goes with --reverse; a forward to HOST takes --local.", code=Exit.BAD_INPUT)
    with DaemonClient.connect() as client:
        if stop:
            if local is not None or run is not None:
                fail("--stop takes no --local or --run.", code=Exit.BAD_INPUT)
            closed = client.call(requests.forwards_close(host=host, remote_port=port)).closed
            _say_closed(closed, json, f"no forward to port {port} of {host} is open.")
            return
        info = client.call(
            requests.forwards_open(host=host, remote_port=port, local_port=local, run_id=run)
        )
    if json:
        print_json(info)
        return
    print(info.url)
    note(
        f"port {port} of {host} is at {info.url} (127.0.0.1 only); "
        f"end it with: rtrain forward {host} {port} --stop"
    )


def _reverse(
    host: str, port: int, remote: int | None, run: str | None, stop: bool, json: bool
) -> None:
    with DaemonClient.connect() as client:
        if stop:
            if remote is not None or run is not None:
                fail("--stop takes no --remote or --run.", code=Exit.BAD_INPUT)
            closed = client.call(
                requests.forwards_close(host=host, local_port=port, reverse=True)
            ).closed
            _say_closed(closed, json, f"no reverse forward from {host} to port {port} is open.")
            return
        info = client.call(
            requests.forwards_reverse(host=host, local_port=port, remote_port=remote, run_id=run)
        )
    if json:
        print_json(info)
        return
    print(f"127.0.0.1:{info.remote_port}")
    ends = (
        "it ends with the run"
        if run
        else f"end it with: rtrain forward --reverse {host} {port} --stop"
    )
    note(
        f"processes on {host} reach port {port} of this machine at 127.0.0.1:"
        f"{info.remote_port} (e.g. {info.url}); {ends}"
    )


@friendly_errors
def forwards(
    host: str | None = typer.Argument(
        None, metavar="[HOST]", help="Only the forwards to this host."
    ),
    stop: str | None = typer.Option(
        None,
        "--stop",
        metavar="LOCAL_PORT|all",
        help="End the forward on this local port, or `all` of them (of HOST, if given).",
    ),
    json: bool = JsonOpt,
) -> None:
    """List the open port forwards: host, remote port, local URL, run, since."""
    if host is not None:
        check(host=host)
    if stop is not None:
        local = None
        if stop != "all":
            if not stop.isdigit():
                fail(
                    f"--stop takes a local port number or `all`, not {stop!r}.",
                    code=Exit.BAD_INPUT,
                )
            local = _port(int(stop), "--stop")
        with DaemonClient.connect() as client:
            closed = client.call(requests.forwards_close(host=host, local_port=local)).closed
        _say_closed(closed, json, "no such forward is open.")
        return
    with DaemonClient.connect() as client:
        listed = client.call(requests.forwards_list(host=host)).forwards
    if json:
        print_json(listed)
        return
    if not listed:
        note(
            "No forwards are open; `rtrain forward HOST PORT` opens one."
            if host is None
            else f"No forwards to {host} are open."
        )
        return
    rows = [
        [
            fwd.host,
            str(fwd.remote_port),
            f"127.0.0.1:{fwd.local_port}" if fwd.reverse else fwd.url,
            fwd.run_id or "-",
            when(fwd.since),
            "-" if fwd.reverse else str(fwd.connections),
            "from host" if fwd.reverse else "to host",
            safe_for_terminal(fwd.last_error or "-"),
        ]
        for fwd in listed
    ]
    header = ["HOST", "PORT", "LOCAL", "RUN", "SINCE", "CONNS", "WAY", "LAST ERROR"]
    print(table(header, rows))


def _say_closed(closed: list[Any], json: bool, none: str) -> None:
    if json:
        print_json({"closed": closed})
        return
    if not closed:
        fail(none, code=Exit.FAILED)
    for fwd in closed:
        if fwd.reverse:
            note(
                f"ended the reverse forward from port {fwd.remote_port} of {fwd.host} to port "
                f"{fwd.local_port} here"
            )
        else:
            note(f"ended the forward of {fwd.url} to port {fwd.remote_port} of {fwd.host}")
