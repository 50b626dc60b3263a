"""`rtrain daemon ...`: start, stop, status, logs, run (foreground)."""

from __future__ import annotations

import time

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.client.errors import DaemonUnavailable
from rtrain.client.spawn import process_alive
from rtrain.protocol import locations, requests

from .output import friendly_errors, note, print_json
from .usage import PlainUsage

app = typer.Typer(
    help="Manage the rtrain daemon (it starts by itself when needed).", no_args_is_help=True
)

JsonOption = typer.Option(False, "--json", "-j", help="Print JSON.")


@app.command(cls=PlainUsage)
@friendly_errors
def start() -> None:
    """Start the daemon if none is running."""
    with DaemonClient.connect(spawn=True) as client:
        info = client.call(requests.daemon_info())
    note(f"rtrain daemon running (pid {info.pid}, socket {info.socket_path})")


@app.command(cls=PlainUsage)
@friendly_errors
def stop() -> None:
    """Stop the daemon. Runs on remote hosts are not affected."""
    try:
        client = DaemonClient.connect(spawn=False)
    except DaemonUnavailable:
        note("rtrain daemon is not running")
        return
    with client:
        info = client.call(requests.daemon_info())
        client.call(requests.daemon_stop())
    deadline = time.monotonic() + 5
    while process_alive(info.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    note(f"stopped rtrain daemon (pid {info.pid})")


@app.command(cls=PlainUsage)
@friendly_errors
def status(json: bool = JsonOption) -> None:
    """Say whether the daemon runs, and where. Exit 1 when it does not."""
    try:
        client = DaemonClient.connect(spawn=False, timeout=5)
    except DaemonUnavailable:
        if json:
            print_json({"running": False, "socketPath": str(locations.socket_path())})
        else:
            note(f"rtrain daemon is not running (socket {locations.socket_path()})")
        raise typer.Exit(1) from None
    with client:
        info = client.call(requests.daemon_info())
    if json:
        print_json({"running": True, **info})
        return
    print(
        f"rtrain daemon {info.version} running: pid {info.pid}, up {info.uptime:.0f} s, "
        f"{info.clients} client(s)\n  socket: {info.socket_path}\n  log:    {info.log_path}"
    )
    for notice in info.notices:
        print(f"  notice: {notice}")


@app.command(cls=PlainUsage)
def logs(
    lines: int = typer.Option(50, "--lines", "-n", help="How many lines from the end."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new lines."),
) -> None:
    """Show the daemon's log."""
    path = locations.log_path()
    if not path.exists():
        note(f"no daemon log yet ({path})")
        raise typer.Exit(1)
    with open(path, "rb") as f:
        tail = f.read().splitlines()[-lines:] if lines > 0 else []
        for line in tail:
            print(line.decode(errors="replace"))
        while follow:
            chunk = f.readline()
            if chunk:
                print(chunk.decode(errors="replace"), end="", flush=True)
            else:
                time.sleep(0.2)


@app.command(cls=PlainUsage)
def run() -> None:
    """Run the daemon in the foreground, logging to the terminal too (for debugging)."""
    from rtrain.daemon.main import main

    raise typer.Exit(main(["--foreground"]))
