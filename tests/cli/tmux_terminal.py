"""A real terminal for the CLI's tests: a private tmux server, read with capture-pane."""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

from tests.cli.conftest import WAIT_S
from tests.required_tools import need


class Tmux:
    """A private tmux server with one window of a fixed size, running one command."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.tool = need("tmux")
        self.socket = f"rtrain-test-{uuid.uuid4().hex[:8]}"
        self.env = env
        self.cwd = cwd

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            [self.tool, "-L", self.socket, "-f", "/dev/null", *args],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    def start(self, command: str) -> None:
        # The shell stays after the command, so its last screen can still be read.
        self.tmux("new-session", "-d", "-x", "120", "-y", "30", "-s", "t", f"{command}; sleep 600")

    def screen(self) -> list[str]:
        return [line.rstrip() for line in self.tmux("capture-pane", "-p", "-t", "t").splitlines()]

    def wait_for(self, text: str) -> list[str]:
        deadline = time.monotonic() + WAIT_S
        while True:
            shown = self.screen()
            if any(text in line for line in shown):
                return shown
            assert time.monotonic() < deadline, f"{text!r} never shown:\n" + "\n".join(shown)
            time.sleep(0.1)

    def close(self) -> None:
        subprocess.run([self.tool, "-L", self.socket, "kill-server"], capture_output=True)
