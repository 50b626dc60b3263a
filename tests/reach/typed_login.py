"""`rtrain login` on a real terminal (a PTY), a password typed into it as a person would."""

from __future__ import annotations

import os
import pty
import select
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from tests.cli.conftest import WAIT_S
from tests.cli.rtrain_command import rtrain_executable


@dataclass
class Typed:
    code: int
    screen: str


def login_on_a_terminal(
    host: str, password: str | None, env: dict[str, str], cwd: Path, prompt: str = "password:"
) -> Typed:
    """Run `rtrain login HOST` on a PTY; type `password` whenever `prompt` shows (None: type
    nothing, for a host that asks nothing). What the terminal showed, and the exit status."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec at once, nothing of pytest's runs here
        try:
            os.chdir(cwd)
            os.execve(rtrain_executable(), ["rtrain", "login", host], env)
        finally:
            os._exit(127)
    shown = b""
    answered = 0
    status: int | None = None
    deadline = time.monotonic() + WAIT_S
    try:
        while status is None:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise AssertionError(f"rtrain login never ended; the terminal showed:\n{shown!r}")
            ready, _, _ = select.select([fd], [], [], 0.1)
            data = _read(fd) if ready else b""
            shown += data
            # Every prompt is answered the same way (ssh asks again after a wrong one).
            if password is not None and shown.lower().count(prompt.encode()) > answered:
                os.write(fd, password.encode() + b"\n")
                answered += 1
            if not data:
                done, code = os.waitpid(pid, os.WNOHANG)
                status = code if done else None
        shown += _read(fd)
    finally:
        os.close(fd)
    return Typed(os.waitstatus_to_exitcode(status), shown.decode(errors="replace"))


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: no process holds the terminal any more
        return b""
