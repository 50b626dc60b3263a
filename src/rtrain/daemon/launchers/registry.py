"""Every launcher by name, and the one place that picks a launcher for a run or a host.

A launcher is a package of this folder; it is registered here, and its name is one of the
wire's `RunLauncher` words (protocol/messages.py). Nothing else compares launcher names:
operations ask `for_run` (how a recorded run is run), `for_host` (how a new run on a host is
run) and `asked` (the launcher a start names), then the launcher's own attributes.
"""

from __future__ import annotations

from collections.abc import Sequence

from rtrain.daemon.user_config import HostSettings
from rtrain.protocol.messages import RunNode, StartParams

from .launcher import Launcher
from .nodes.launcher import NodesLauncher
from .process.launcher import ProcessLauncher
from .slurm.launcher import SlurmLauncher
from .torchrun.launcher import TorchrunLauncher

# In the order a host's own run is offered to them (claims_command): the first that claims
# its command runs it, so the catch-all `process` comes last.
LAUNCHERS: dict[str, type[Launcher]] = {}


def register(launcher: type[Launcher]) -> type[Launcher]:
    """Make `launcher` known by its name (before the catch-all: tests register their own)."""
    LAUNCHERS.pop(launcher.name, None)
    rest = dict(LAUNCHERS)
    LAUNCHERS.clear()
    LAUNCHERS[launcher.name] = launcher
    LAUNCHERS.update(rest)
    return launcher


for _launcher in (ProcessLauncher, TorchrunLauncher, NodesLauncher, SlurmLauncher):
    register(_launcher)


def named(name: str) -> type[Launcher]:
    return LAUNCHERS[name]


def asked(name: str | None) -> type[Launcher] | None:
    """The launcher a start names (`--launcher`), None when it names none."""
    return None if name is None else LAUNCHERS[name]


def across_hosts() -> type[Launcher]:
    """The launcher of a run whose nodes are several hosts."""
    return next(launcher for launcher in LAUNCHERS.values() if launcher.across_hosts)


def for_host(settings: HostSettings, command: Sequence[str] | None = None) -> type[Launcher]:
    """How a new run is run on a host: batch jobs of the scheduler config.toml names (the
    job itself runs torchrun where the command asks), else the first of the host's own
    launchers that claims the run's command (as recorded, expanded)."""
    if settings.scheduler is not None:
        for launcher in LAUNCHERS.values():
            if launcher.scheduler == settings.scheduler:
                return launcher
    return next(
        launcher
        for launcher in LAUNCHERS.values()
        if launcher.scheduler is None
        and not launcher.across_hosts
        and launcher.claims_command(command)
    )


def for_run(
    recorded: str | None,
    settings: HostSettings,
    command: Sequence[str] | None = None,
    nodes: Sequence[RunNode] = (),
    *,
    again: bool = False,
) -> type[Launcher]:
    """The launcher a run recorded (RunInfo.launcher): a run keeps how it was launched when
    config.toml changes. A run that recorded none (an older rtrain's, or one known only by
    host and run id) is run as the host's config says now. `again`: for a new attempt, a
    run of the host's own runs torchrun or not as its (perhaps new) command says."""
    launcher = LAUNCHERS.get(recorded) if recorded is not None else None
    if launcher is None or (launcher.across_hosts and not nodes):
        return for_host(settings, command)
    if again and launcher.scheduler is None and not launcher.across_hosts:
        return for_host(HostSettings(), command)
    return launcher


def options_problem(launcher: Launcher, host: str, p: StartParams) -> str | None:
    """Why the start's options cannot go to `launcher`: another launcher's own options (in
    one sentence naming where they apply), or values its own would misread."""
    for other in LAUNCHERS.values():
        if other is type(launcher):
            continue
        given = other.given_options(p)
        if given:
            return f"{', '.join(given)} {other.options_belong(host)}."
    return launcher.options_problem(p)
