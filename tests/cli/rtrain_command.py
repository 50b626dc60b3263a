"""Running the installed `rtrain` console script as a user would: a subprocess, its own env."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import sysconfig
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Only to stop a broken test from hanging; a healthy command ends far sooner.
COMMAND_TIMEOUT_S = 60.0


def rtrain_executable() -> str:
    """The console script of this interpreter's install (a pyenv shim would add ~0.2 s)."""
    beside = Path(sysconfig.get_path("scripts")) / "rtrain"
    if beside.is_file():
        return str(beside)
    found = shutil.which("rtrain")
    if found is None:
        raise RuntimeError("the `rtrain` console script is not installed (pip install -e .)")
    return found


@dataclass
class Outcome:
    """What one finished command left: exit status, stdout, stderr."""

    argv: list[str]
    code: int
    out: str
    err: str

    @property
    def out_lines(self) -> list[str]:
        return self.out.splitlines()

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()

    def json(self) -> Any:
        return json.loads(self.out)

    def json_lines(self) -> list[Any]:
        return [json.loads(line) for line in self.out_lines]

    def __str__(self) -> str:
        return f"{self.argv[1:]} -> {self.code}\n--- stdout\n{self.out}--- stderr\n{self.err}"


def run_rtrain(
    args: list[str], *, env: dict[str, str], cwd: Path, timeout: float = COMMAND_TIMEOUT_S
) -> Outcome:
    argv = [rtrain_executable(), *args]
    done = subprocess.run(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Outcome(argv, done.returncode, done.stdout, done.stderr)


class RunningCommand:
    """A command still running; its stdout is read line by line as it arrives."""

    def __init__(self, args: list[str], *, env: dict[str, str], cwd: Path) -> None:
        self.argv = [rtrain_executable(), *args]
        self.process = subprocess.Popen(
            self.argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._arrived: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        # stderr is drained as it comes too: a read in `finish` would block past its timeout
        # on a command that never ends, and a full pipe would stall the command.
        self._err: list[str] = []
        self._err_reader = threading.Thread(target=self._read_err, daemon=True)
        self._err_reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._arrived.put(line.rstrip("\n"))
        self._arrived.put(None)

    def _read_err(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._err.append(line)

    def wait_for_line(
        self, matches: Callable[[str], bool], timeout: float = COMMAND_TIMEOUT_S
    ) -> str:
        """The first stdout line (from now on) that `matches`; fails if stdout ends first."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._arrived.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"no matching line within {timeout} s: {self.lines}") from None
            if line is None:
                raise AssertionError(f"stdout ended without a matching line: {self.lines}")
            self.lines.append(line)
            if matches(line):
                return line

    def finish(self, timeout: float = COMMAND_TIMEOUT_S) -> Outcome:
        """Waits up to `timeout` for the command to end; one still running then is killed and
        the test fails, saying what it had printed."""
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            err = "".join(self._err)
            raise AssertionError(
                f"{self.argv[1:]} still running after {timeout} s; stdout: {self.lines}, "
                f"stderr: {err!r}"
            ) from None
        self._reader.join(timeout)
        self._err_reader.join(timeout)
        err = "".join(self._err)
        self._close_pipes()
        while True:
            line = self._arrived.get_nowait() if not self._arrived.empty() else None
            if line is None:
                break
            self.lines.append(line)
        out = "".join(line + "\n" for line in self.lines)
        return Outcome(self.argv, code, out, err)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._reader.join(COMMAND_TIMEOUT_S)
        self._err_reader.join(COMMAND_TIMEOUT_S)
        self._close_pipes()

    def _close_pipes(self) -> None:
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()
