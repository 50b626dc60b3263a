"""Processes a test's runs left behind, found by the RTRAIN_RUN_ID marker every trainer carries."""

from __future__ import annotations

import os
import signal
from pathlib import Path


def marked_pids(tag: str) -> list[int]:
    """Live processes whose RTRAIN_RUN_ID contains `tag`."""
    needle = tag.encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(") ", 1)[1][0]
        except (OSError, IndexError):
            continue
        marked = any(item.startswith(b"RTRAIN_RUN_ID=") and needle in item for item in environ)
        if marked and state != "Z":
            found.append(int(entry.name))
    return found


def kill_marked(tag: str) -> None:
    for pid in marked_pids(tag):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
