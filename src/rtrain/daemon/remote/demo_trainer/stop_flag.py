"""SIGTERM and SIGINT, noted so the training loop stops between steps."""

from __future__ import annotations

import signal
import time
from typing import Any


class StopFlag:
    """Set by SIGTERM/SIGINT; the loop stops between steps, never inside a checkpoint write."""

    def __init__(self) -> None:
        self.signal_number: int | None = None

    def install(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame: Any) -> None:
        self.signal_number = signum

    def sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self.signal_number is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.05))
