"""A run's limits (how long it may run; when it counts as stalled and what then), chosen from
the start's options and the host's config.toml, and how they travel: to launch.sh, which
starts their watcher on the host (limits.sh, so they hold with the daemon gone), to
meta.json (a restart keeps them), and on Slurm to the job's --time.
"""

from __future__ import annotations

import msgspec

from rtrain.daemon.remote import script
from rtrain.daemon.remote.contract import launch_scripts
from rtrain.daemon.user_config import HostSettings
from rtrain.protocol.messages import OnStall, RunInfo, StartParams

# A run whose log is this still (and its GPUs idle) is flagged, unless told otherwise.
DEFAULT_STALL_AFTER = 30 * 60
# The watcher and the stop it runs, shipped into the run dir (names kept from datasets).
LIMITS_FILE = "rtrain-limits"
STOP_FILE = "rtrain-stop"
# Files the watcher writes in the run dir.
WATCHER_FILES = (
    "stalled",
    "stalled.tmp",
    "limit_stop",
    "limit_stop.tmp",
    "limits.pid",
    "limits.pid.tmp",
)


class Limits(msgspec.Struct, frozen=True):
    """Seconds, 0 for none; as meta.json records them (`limits`)."""

    max_duration: int = 0
    stall_after: int = 0
    on_stall: OnStall = "flag"

    @property
    def watched(self) -> bool:
        return bool(self.max_duration or self.stall_after)

    def on_run(self, run: RunInfo) -> RunInfo:
        """`run` saying which limits it has."""
        return msgspec.structs.replace(
            run,
            max_duration=self.max_duration or None,
            stall_after=self.stall_after or None,
            on_stall=self.on_stall if self.stall_after else None,
        )


def chosen_limits(p: StartParams, settings: HostSettings) -> Limits:
    """The start's own limits, else the host's, else none and a 30-minute stall flag."""
    max_duration = p.max_duration
    if max_duration is None:
        max_duration = settings.limit("max_duration") or 0
    stall_after = p.stall_after
    if stall_after is None:
        host_stall = settings.limit("stall_after")
        stall_after = DEFAULT_STALL_AFTER if host_stall is None else host_stall
    on_stall = p.on_stall or settings.on_stall or "flag"
    return Limits(max_duration=max_duration, stall_after=stall_after, on_stall=on_stall)


def watcher_files() -> list[tuple[str, bytes]]:
    """The watcher (limits.sh) and the stop it runs (stop.sh), each after its libraries."""
    return [(LIMITS_FILE, script("limits").encode()), (STOP_FILE, script("stop").encode())]


def launch_line(limits: Limits, grace: float) -> launch_scripts.LimitsLine | None:
    """launch.sh's `+limits` line for `limits`; the stop they make waits `grace` seconds."""
    if not limits.watched:
        return None
    return launch_scripts.LimitsLine(
        max_duration=limits.max_duration,
        stall_after=limits.stall_after,
        on_stall=limits.on_stall,
        grace=grace,
    )
