"""Reading the far side's verdict on runs (status.sh rows) into RunInfo."""

from __future__ import annotations

import msgspec

from rtrain.daemon.remote.contract.run_scripts import RunRow
from rtrain.protocol.limit_words import limit_reason
from rtrain.protocol.messages import RunInfo

from .context import now

# How far two looks may put the start of one stall apart (each says "still for N s" in
# whole seconds of the host's clock) and still be the same stall.
_SAME_STALL = 5.0


def apply_row(base: RunInfo, row: RunRow) -> RunInfo | None:
    """The run as the far side's row says it stands; None when it is missing."""
    if not row.exists:
        return None
    reason = row.detail
    if row.stopped_by is not None and row.limit_seconds is not None:
        reason = limit_reason(row.stopped_by, row.limit_seconds)
    return msgspec.structs.replace(
        base,
        state=row.state,
        exit_code=row.exit_code,
        signal=row.signal,
        started_at=row.started_at or base.started_at,
        last_seen=now(),
        reason=reason,
        job_id=row.job_id or base.job_id,
        scheduler_state=row.scheduler_state,
        stalled_since=_stalled_since(base, row),
        stopped_by=row.stopped_by,
        ending=row.ending,
    )


def _stalled_since(base: RunInfo, row: RunRow) -> float | None:
    """Since when (the daemon's clock) the run has been still, as the host counts it."""
    if row.state != "running" or row.stalled_for is None:
        return None
    since = round(now() - row.stalled_for)
    if base.stalled_since is not None and abs(base.stalled_since - since) <= _SAME_STALL:
        return base.stalled_since
    return float(since)
