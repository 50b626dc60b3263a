"""Reading the far side's verdict on runs (status.sh rows) into RunInfo."""

from __future__ import annotations

import msgspec

from rtrain.daemon.remote.contract import RunRow
from rtrain.protocol.messages import RunInfo

from .context import now


def apply_row(base: RunInfo, row: RunRow) -> RunInfo | None:
    """The run as the far side's row says it stands; None when it is missing."""
    if not row.exists:
        return None
    return msgspec.structs.replace(
        base,
        state=row.state,
        exit_code=row.exit_code,
        signal=row.signal,
        started_at=row.started_at or base.started_at,
        last_seen=now(),
        reason=row.detail,
        job_id=row.job_id or base.job_id,
        scheduler_state=row.scheduler_state,
    )
