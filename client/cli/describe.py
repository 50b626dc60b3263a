"""Words for what the daemon returns: a run's state line, tables, sizes."""

from __future__ import annotations

import time
from typing import Any


def state_text(run: Any) -> str:
    """`running`, `completed`, `failed (exit 3)`, `unknown (host unreachable: ...)`, and for
    a scheduler's job its own word where it says more: `failed (TIMEOUT)`, `stopped
    (CANCELLED)`, `queued (waiting for ...)`."""
    scheduler_state = getattr(run, "scheduler_state", None)
    if scheduler_state and run.state in ("failed", "stopped", "lost"):
        return f"{run.state} ({scheduler_state})"
    if run.state == "failed":
        if run.reason in ("setup", "program not found"):
            return f"failed ({run.reason}, exit {run.exit_code})"
        if run.signal:
            return f"failed (exit {run.exit_code}, signal {run.signal})"
        if run.reason and run.reason.startswith("rank "):  # which rank of a torchrun run, and why
            return f"failed (exit {run.exit_code}, {run.reason})"
        return f"failed (exit {run.exit_code})"
    if run.state in ("unknown", "lost", "queued") and run.reason:
        return f"{run.state} ({run.reason})"
    return str(run.state)


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
