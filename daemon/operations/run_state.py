"""Reading the far side's verdict on runs (status.sh rows) into RunInfo."""

from __future__ import annotations

import msgspec

from rtrain.protocol.messages import RunInfo

from .context import now

FAR_STATES = {"running", "completed", "failed", "stopped", "lost"}


def apply_row(base: RunInfo, row: list[str]) -> RunInfo | None:
    """`run ID STATE EXIT SIGNAL STARTED DETAIL` -> the updated run; None when missing."""
    _, state, exit_code, signal, started, detail = (row + ["-"] * 6)[:6]
    if state not in FAR_STATES:
        return None
    return msgspec.structs.replace(
        base,
        state=state,
        exit_code=_int(exit_code),
        signal=_int(signal),
        started_at=_float(started) or base.started_at,
        last_seen=now(),
        reason=None if detail in ("-", "") else detail,
    )


def _int(value: str) -> int | None:
    return int(value) if value.lstrip("-").isdigit() else None


def _float(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None
