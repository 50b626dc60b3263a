"""What the tests read from /proc: processes of a run, ssh clients, liveness."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path


def marked_pids(match: Callable[[str], bool]) -> list[int]:
    """Live processes whose RTRAIN_RUN_ID marker satisfies `match`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(") ", 1)[1][0]
        except (OSError, IndexError):
            continue
        markers = [
            item[len(b"RTRAIN_RUN_ID=") :].decode(errors="replace")
            for item in environ
            if item.startswith(b"RTRAIN_RUN_ID=")
        ]
        if state != "Z" and any(match(marker) for marker in markers):
            found.append(int(entry.name))
    return found


def argv_pids(match: Callable[[list[bytes]], bool]) -> list[int]:
    """Processes whose argv (as /proc holds it, NUL-split) satisfies `match`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if match(argv):
            found.append(int(entry.name))
    return found


def run_pids(run_id: str) -> list[int]:
    """Live processes of one run, found by its marker as the far side would."""
    return marked_pids(lambda marker: marker == run_id)


def kill_run(run_id: str) -> None:
    """SIGKILL every process of one run. Killed in rounds: the session leader may fork the
    trainer between a look at /proc and the kill, and that child must die too."""
    while pids := run_pids(run_id):
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def process_gone(pid: int) -> bool:
    """True once every thread of `pid` has ended. A killed leader turns zombie while its
    other threads still hold the process's files (the daemon's socket among them)."""
    try:
        threads = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return True
    return not pid_alive(pid) and len(threads) <= 1


def ssh_processes() -> dict[int, list[str]]:
    """Every live `ssh` client on this machine: pid -> argv."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
        except OSError:
            continue
        if argv and Path(argv[0]).name == "ssh" and pid_alive(int(entry.name)):
            found[int(entry.name)] = argv
    return found


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[1])
