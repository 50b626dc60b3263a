"""Words for what the daemon returns: tables, times, the exit status of a run's outcome
(a run's state line is client/run_state_text.py, shared with the Python API)."""

from __future__ import annotations

import time
from typing import Any


def when(epoch: float | None) -> str:
    if not epoch:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch))


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [
        max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=False)
    ]
    lines = [
        "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=False)).rstrip()
        for row in [headers, *rows]
    ]
    return "\n".join(lines)


def outcome_exit_code(run: Any) -> int:
    """The CLI's exit status for a run that ended: 0 only when it completed."""
    return 0 if run.state == "completed" else 1
