"""Processes a test's runs left behind, found by the RTRAIN_RUN_ID marker every trainer carries."""

from __future__ import annotations

import os
import signal

from tests.operations.processes import marked_pids


def kill_marked(tag: str) -> None:
    for pid in marked_pids(lambda marker: tag in marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
