"""`rtrain login HOST` and `rtrain logout HOST`: log in once where a host asks for a password
or a second factor, and the daemon uses that connection (docs/cli.md#logging-in-once)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.protocol import requests

from .completion import complete_host
from .exit_codes import Exit
from .input_checks import check
from .output import fail, friendly_errors, note, print_json
from .shared_options import JsonOpt

LoginHostArg = typer.Argument(
    ..., metavar="HOST", help="SSH alias of the host.", autocompletion=complete_host
)


@friendly_errors
def login(host: str = LoginHostArg, json: bool = JsonOpt) -> None:
    """Log in to HOST once, on this terminal (a password, a one-time code, a security
    key's touch); the daemon then reaches HOST through that connection until it ends."""
    check(host=host)
    with DaemonClient.connect() as client:
        how = client.call(requests.host_login(host=host))
        if how.argv:
            if not sys.stdin.isatty():
                fail(
                    f"rtrain login needs a terminal to answer {host}'s questions; run it in one.",
                    code=Exit.BAD_INPUT,
                )
            note(f"logging in to {host}; answer its questions here")
            try:
                code = _run_on_this_terminal(how.argv)
            except OSError as error:
                fail(f"could not run ssh: {error.strerror or error}.")
            if code != 0:
                fail(f"ssh did not log in to {host} (exit status {code}); nothing changed.")
            how = client.call(requests.host_login(host=host))
            if how.argv:
                fail(
                    f"ssh logged in to {host}, but its connection did not stay up; try "
                    f"`rtrain login {host}` again."
                )
    if json:
        print_json(how)
    elif how.since is not None:
        note(
            f"logged in to {host} (since {since_text(how.since)}); rtrain uses this "
            f"connection until it ends or `rtrain logout {host}`."
        )
    else:
        note(f"{host} lets rtrain in with your keys; no login needed.")


@friendly_errors
def logout(host: str = LoginHostArg, json: bool = JsonOpt) -> None:
    """End HOST's login connection (the next command on HOST then needs `rtrain login`
    again, where the host asks for a password or a second factor)."""
    check(host=host)
    with DaemonClient.connect() as client:
        done = client.call(requests.host_logout(host=host))
    if json:
        print_json(done)
    elif done.ended:
        note(f"logged out of {host}")
    else:
        note(f"{host} held no login")


def _run_on_this_terminal(argv: list[str]) -> int:
    """Run ssh on this terminal (it asks there), in a process group of its own that holds the
    terminal's foreground while it runs; then take the foreground back.

    Where rtrain itself owns the terminal (a VS Code terminal runs `rtrain login` as its
    program), its exit hangs up the foreground group; a ProxyJump's ssh, which the login
    master keeps as its child, must not be in it.
    """
    tty = sys.stdin.fileno()

    def in_front() -> None:  # in the child, before exec
        os.setpgid(0, 0)
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # a background group may not take it
        os.tcsetpgrp(tty, os.getpgrp())
        signal.signal(signal.SIGTTOU, signal.SIG_DFL)

    proc = subprocess.Popen(argv, preexec_fn=in_front)
    try:
        return proc.wait()
    finally:
        ignored = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        try:
            os.tcsetpgrp(tty, os.getpgrp())
        except OSError:
            pass  # the terminal is gone: nothing to take back
        finally:
            signal.signal(signal.SIGTTOU, ignored)


def since_text(at: float) -> str:
    """`14:05`, or `Dec 03 14:05` for a login of another day, in local time."""
    when = time.localtime(at)
    same_day = time.localtime()[:3] == when[:3]
    return time.strftime("%H:%M" if same_day else "%b %d %H:%M", when)
