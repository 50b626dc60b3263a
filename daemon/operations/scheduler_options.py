"""A start's scheduler options (--time, --partition, --nodes, ...), judged before any SSH."""

from __future__ import annotations

from rtrain.daemon.launchers.slurm import SlurmLauncher
from rtrain.daemon.slurm.batch_script import check_request
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import StartParams

from .context import Ops


def check_scheduler_options(ops: Ops, p: StartParams) -> None:
    """Refuse options the host's launcher cannot honour, and values Slurm would misread."""
    launcher = ops.launcher(p.host)
    if isinstance(launcher, SlurmLauncher):
        problem = check_request(launcher.request(p))
        if problem is not None:
            raise app_error(Kind.INVALID_COMMAND, problem)
        return
    given = [
        option
        for option, value in (
            ("--partition", p.partition),
            ("--time", p.time),
            ("--nodes", p.nodes != 1),
            ("--signal-before-timeout", p.signal_before_timeout),
            ("--requeue", p.requeue),
        )
        if value
    ]
    if given:
        raise app_error(
            Kind.INVALID_COMMAND,
            f"{', '.join(given)} apply to Slurm hosts only, and {p.host} is not one "
            f'(set scheduler = "slurm" under [hosts.{p.host}] in config.toml).',
        )
