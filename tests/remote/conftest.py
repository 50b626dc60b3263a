"""Run the far-side scripts exactly as the daemon does, against real processes.

`sh -c SCRIPT rtrain ARG...`, the SCRIPT assembled by the daemon's own
`rtrain.daemon.remote.script`, with HOME pointed at a temporary directory.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rtrain.daemon.remote import script
from rtrain.daemon.remote.cache_inputs import FILL_LOCK

PYTHON = sys.executable
IN_CI = os.environ.get("CI", "").lower() == "true"


def shells() -> list[str]:
    """/bin/sh (dash on Debian) always; bash as well, since it is /bin/sh on other hosts."""
    found = ["/bin/sh"]
    bash = shutil.which("bash")
    if bash and os.path.realpath(bash) != os.path.realpath("/bin/sh"):
        found.append(bash)
    return found


@dataclass
class Result:
    returncode: int
    stdout: bytes
    stderr: str

    @property
    def lines(self) -> list[list[str]]:
        return [line.split("\t") for line in self.stdout.decode().splitlines()]

    def values(self, key: str) -> list[list[str]]:
        """Fields after KEY of every line that starts with KEY."""
        return [fields[1:] for fields in self.lines if fields[0] == key]

    def value(self, key: str) -> str:
        found = self.values(key)
        assert len(found) == 1, f"expected one {key!r} line in {self.stdout!r}"
        return "\t".join(found[0])


@dataclass
class Remote:
    """The far host, played by this machine: a shell, a home directory, an environment."""

    shell: str
    home: Path
    env: dict[str, str]
    run_ids: list[str] = field(default_factory=list)

    def run(
        self,
        operation: str,
        *args: str,
        stdin: bytes = b"",
        timeout: float = 30,
        env: dict[str, str] | None = None,
        preexec: Callable[[], None] | None = None,
    ) -> Result:
        completed = subprocess.run(
            [self.shell, "-c", script(operation), "rtrain", *args],
            input=stdin,
            capture_output=True,
            cwd=self.home,
            env=env if env is not None else self.env,
            timeout=timeout,
            preexec_fn=preexec,
        )
        return Result(completed.returncode, completed.stdout, completed.stderr.decode())

    def new_run_id(self, prefix: str = "run") -> str:
        run_id = f"{prefix}-{uuid.uuid4().hex[:12]}"
        self.run_ids.append(run_id)
        return run_id

    def prepare(self, run_id: str | None = None, workdir: str = "~/.rtrain") -> tuple[str, Path]:
        run_id = run_id or self.new_run_id()
        result = self.run("prepare", workdir, run_id)
        assert result.returncode == 0, result
        return run_id, Path(result.value("run_dir"))

    def launch(
        self,
        code: str,
        *,
        secrets: bytes = b"",
        run_id: str | None = None,
        env: dict[str, str] | None = None,
    ) -> Launched:
        """Start `python -c CODE` as a run; waits until the trainer itself is running."""
        run_id, run_dir = self.prepare(run_id)
        result = self.run(
            "launch", str(run_dir), run_id, PYTHON, PYTHON, "-c", code, stdin=secrets, env=env
        )
        assert result.returncode == 0, result
        return Launched(run_id, run_dir, int(result.value("pid")), int(result.value("started_at")))

    def status(self, run_id: str, workdir: str = "~/.rtrain") -> list[str]:
        result = self.run("status", workdir, run_id)
        assert result.returncode == 0, result
        (line,) = result.values("run")
        return line

    def stop(self, launched: Launched, grace: str = "1", force: str = "0") -> Result:
        return self.run("stop", str(launched.run_dir), launched.run_id, grace, force)


@dataclass
class Launched:
    run_id: str
    run_dir: Path
    pid: int
    started_at: int


def proc_state(pid: int) -> str | None:
    """The one-letter state of PID, or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def alive(pid: int) -> bool:
    """A zombie has ended: nothing on this machine reaps orphans, so it counts as gone."""
    return proc_state(pid) not in (None, "Z", "X")


def proc_environ(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return []


def marked_pids(run_id: str) -> list[int]:
    """Live processes whose environment carries the run's marker."""
    marker = f"RTRAIN_RUN_ID={run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and marker in proc_environ(int(entry.name)):
            if alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def all_cmdlines() -> list[bytes]:
    lines = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                lines.append((entry / "cmdline").read_bytes())
            except OSError:
                pass
    return lines


def wait_for(predicate: Callable[[], bool], timeout: float = 15, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def wait_for_fills(cache_dir: Path) -> None:
    """Until no process fills the cache (each holds `fill.lock` shared while it copies)."""
    lock = cache_dir / FILL_LOCK
    if not lock.exists():
        return
    with open(lock) as held:
        fcntl.flock(held, fcntl.LOCK_EX)


def wait_file(path: Path, timeout: float = 15, empty_ok: bool = False) -> str:
    """The file's text once it exists (and, unless empty_ok, has content)."""
    wait_for(lambda: path.exists() and (empty_ok or path.read_text() != ""), timeout, path.name)
    return path.read_text()


def assert_run_ends(run_id: str, timeout: float = 15) -> None:
    wait_for(lambda: not marked_pids(run_id), timeout, f"every process of {run_id} to end")


@pytest.fixture(params=shells(), ids=lambda shell: Path(shell).name)
def remote(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Remote]:
    home = tmp_path / "home"
    home.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("RTRAIN_") and key not in ("PYTHONPATH",)
    }
    env["HOME"] = str(home)
    box = Remote(request.param, home, env)
    yield box
    # Whatever a test left running dies here, found the same way the scripts find it.
    for run_id in box.run_ids:
        for pid in marked_pids(run_id):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def bystander() -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    """Processes that belong to no run; killed after the test."""
    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [PYTHON, "-c", "import time; time.sleep(120)"], start_new_session=True
        )
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()
        process.wait()


@pytest.fixture
def stripped_path(tmp_path: Path) -> Callable[[set[str]], str]:
    """A PATH with every command of the current one except the named ones (symlinks)."""

    def build(missing: set[str]) -> str:
        bin_dir = tmp_path / ("bin-without-" + "-".join(sorted(missing)))
        bin_dir.mkdir()
        for directory in os.environ.get("PATH", "").split(os.pathsep):
            if not directory or not os.path.isdir(directory):
                continue
            for name in os.listdir(directory):
                target = os.path.join(directory, name)
                link = bin_dir / name
                if name in missing or link.exists() or not os.access(target, os.X_OK):
                    continue
                link.symlink_to(target)
        return str(bin_dir)

    return build
