"""A one-line progress bar on stderr for `$/progress`, drawn only on a terminal."""

from __future__ import annotations

import sys
import time
from typing import Any

from rtrain.protocol.byte_sizes import human_bytes


class ProgressBar:
    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._started = time.monotonic()
        self._drawn = False

    def update(self, params: Any) -> None:
        if not self.enabled:
            return
        value = params.value
        if value.kind == "end":
            self.clear()
            return
        done = value.done_bytes or 0
        total = value.total_bytes or 0
        width = 24
        filled = int(width * done / total) if total else 0
        rate = done / max(time.monotonic() - self._started, 1e-3)
        title = value.title or ""
        files = f"  {value.done_files}/{value.total_files} files" if value.total_files else ""
        line = (
            f"\r  {title[:30]:<30} [{'#' * filled}{'.' * (width - filled)}] "
            f"{human_bytes(done)} / {human_bytes(total)}{files}  {human_bytes(rate)}/s"
        )
        sys.stderr.write(line)
        sys.stderr.flush()
        self._drawn = True

    def clear(self) -> None:
        if self._drawn:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()
            self._drawn = False


class StatusLine:
    """One line on stderr for `$/progress` without byte counts (a build: its title and how
    long so far), redrawn in place, only on a terminal."""

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._drawn = False

    def update(self, params: Any) -> None:
        if not self.enabled:
            return
        value = params.value
        if value.kind == "end":
            self.clear()
            return
        sys.stderr.write(f"\r\x1b[2K  {value.title or ''}: {value.message or ''}")
        sys.stderr.flush()
        self._drawn = True

    def clear(self) -> None:
        if self._drawn:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()
            self._drawn = False
