"""A start's scheduler options (--time, --partition, --nodes, ...), judged before any SSH."""

from __future__ import annotations

from rtrain.daemon.launchers import registry as launchers
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import StartParams

from .context import DaemonState


def check_scheduler_options(ops: DaemonState, p: StartParams) -> None:
    """Refuse options the host's launcher cannot honour, and values Slurm would misread."""
    problem = launchers.options_problem(ops.launcher(p.host), p.host, p)
    if problem is not None:
        raise app_error(Kind.INVALID_COMMAND, problem)
