"""One line on stderr for `$/progress`, redrawn in place, drawn only on a terminal."""

from __future__ import annotations

import sys
import time
from typing import Any

from rtrain.protocol.byte_sizes import human_bytes


class _TerminalLine:
    """The line's life: drawn while the work reports, cleared when it ends; what it says is
    the subclass's `text`."""

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
        sys.stderr.write(self.text(value))
        sys.stderr.flush()
        self._drawn = True

    def text(self, value: Any) -> str:
        raise NotImplementedError

    def clear(self) -> None:
        if self._drawn:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()
            self._drawn = False


class ProgressBar(_TerminalLine):
    """Bytes and files moved, as a bar with the rate so far."""

    def __init__(self, enabled: bool | None = None) -> None:
        super().__init__(enabled)
        self._started = time.monotonic()

    def text(self, value: Any) -> str:
        done = value.done_bytes or 0
        total = value.total_bytes or 0
        width = 24
        filled = int(width * done / total) if total else 0
        rate = done / max(time.monotonic() - self._started, 1e-3)
        title = value.title or ""
        files = f"  {value.done_files}/{value.total_files} files" if value.total_files else ""
        return (
            f"\r  {title[:30]:<30} [{'#' * filled}{'.' * (width - filled)}] "
            f"{human_bytes(done)} / {human_bytes(total)}{files}  {human_bytes(rate)}/s"
        )


class StatusLine(_TerminalLine):
    """Work without byte counts (a build): its title and how long so far."""

    def text(self, value: Any) -> str:
        return f"\r\x1b[2K  {value.title or ''}: {value.message or ''}"
