"""What the operations ask of a launcher: start a run, say how runs stand, stop one.

A transport says how a host is reached (exec, console, local); a launcher says how a run is
run: a detached session (`process`), torchrun's ranks (`torchrun`), torchrun across hosts
(`nodes`), a scheduler's batch job (`slurm`). Each is one package of this folder, registered
by name in registry.py, which is the only place that picks one. A launcher is built for a
placement (placement.py): what it may use to reach where its runs live, so that a launcher
whose runs live behind an API rather than a host fits as well as one that runs far-side
scripts over a transport.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from rtrain.daemon.remote.contract.launch_scripts import LaunchAhead, Launched
from rtrain.daemon.remote.contract.run_scripts import StatusReport, StopReport
from rtrain.protocol.messages import (
    Finding,
    PartitionInfo,
    PreflightParams,
    RunLauncher,
    StartParams,
)

from .placement import Placement


@dataclass
class SchedulerVerdict:
    """What the scheduler behind a launcher offers a run, for host/preflight: it leads the
    verdict, and the host's own python and GPUs are only its login node's."""

    # What its findings and problems are filed under (the scheduler's name).
    topic: str
    # Why a run as asked could not be submitted.
    reasons: list[str] = field(default_factory=list)
    # What it offers, one line each, for the top of the verdict.
    findings: list[Finding] = field(default_factory=list)
    # Its partitions (queues), kept for `hosts`.
    partitions: list[PartitionInfo] = field(default_factory=list)
    # PreflightResult's fields that carry the scheduler's own section, by name.
    result_fields: dict[str, object] = field(default_factory=dict)


class Launcher(ABC):
    # The name a run records (RunInfo.launcher), so every later operation on it uses the
    # same launcher (registry.for_run).
    name: ClassVar[RunLauncher]
    # Whether a run's processes live on the host rtrain reaches, so that the monitor's
    # watch.sh (which reads states from the processes themselves) tells how the run stands,
    # rtrain shares the host's GPUs among runs, and watches the run's limits on the host.
    runs_on_host: ClassVar[bool] = True
    # Whether the run's state is what `status` says rather than what watch.sh reads on the
    # host rtrain reaches: a scheduler's jobs, and a run across hosts (every node's state).
    states_from_status: ClassVar[bool] = False
    # Seconds a stop waits after SIGTERM when the user gives no --grace.
    default_grace: ClassVar[float] = 10.0
    # The word of config.toml's `scheduler` that makes a host's runs this launcher's
    # (None: a launcher of hosts that run processes themselves).
    scheduler: ClassVar[str | None] = None
    # Whether the trainer runs under torchrun: always (True), never (False), or as the
    # command says (None).
    runs_torchrun: ClassVar[bool | None] = None
    # The launcher of a run whose nodes are several hosts.
    across_hosts: ClassVar[bool] = False
    # Whether its launch is launch.sh on the run's own host, which a start opens ahead
    # (LaunchAhead: beside the claim, waiting for its go) and hands to `launch`.
    launches_ahead: ClassVar[bool] = False

    @classmethod
    @abstractmethod
    def placed(cls, where: Placement) -> Launcher:
        """The launcher for runs at `where` (the host's settings, the nodes of a run across
        hosts, how to reach a host)."""

    @classmethod
    def claims_command(cls, command: Sequence[str] | None) -> bool:
        """Whether a run of a host's own with this (expanded) command is this launcher's
        (asked of the launchers a host runs by itself, in the registry's order)."""
        return False

    @classmethod
    def given_options(cls, p: StartParams) -> list[str]:
        """The start's options of this launcher's own that `p` gives, as the CLI spells them."""
        return []

    @classmethod
    def options_belong(cls, host: str) -> str:
        """Where this launcher's own options apply, for refusing them elsewhere: `apply to
        ... only, and HOST is not one (what to set)`."""
        return f"apply to {cls.name} runs only"

    @abstractmethod
    async def launch(
        self,
        run_dir: str,
        run_id: str,
        python: str,
        command: Sequence[str],
        secrets: bytes,
        params: StartParams | None = None,
        ahead: LaunchAhead | None = None,
    ) -> Launched:
        """Start `command` in the prepared `run_dir`, detached from the connection, with
        `secrets` (`NAME<TAB>base64` lines) in its environment; `params` are the start's own
        options (GPUs, a scheduler's time limit...). Safe to ask twice: a second
        launch of the same run is `already_launched`, never a second trainer. `ahead`: a
        launch.sh a start opened on the run's host (`launches_ahead`), used while it still
        waits for its go; a launcher that does not use it leaves it to the start to end."""

    @abstractmethod
    async def status(self, workdir: str, run_ids: Sequence[str]) -> StatusReport:
        """How each run of `workdir` stands, in one far-side command for all of them."""

    @abstractmethod
    async def stop(self, run_dir: str, run_id: str, grace: float, force: bool) -> StopReport:
        """Stop every process of the run (TERM, `grace` seconds, then KILL if `force`), and
        say `stopped` only once nothing of it is left."""

    async def preflight(self, p: PreflightParams, workdir: str) -> SchedulerVerdict | None:
        """What the scheduler behind this launcher offers a run of `p`, for host/preflight;
        None where runs live on the host itself (its own GPUs and python are the verdict)."""
        return None

    @classmethod
    def reverse_forward_problem(cls, host: str, nodes: int) -> str | None:
        """Why a reverse forward would not reach this launcher's run of `nodes` nodes: it
        listens on 127.0.0.1 of `host` itself, and a batch job's compute node and the other
        nodes of a run across hosts have loopbacks of their own. None where it would."""
        if cls.scheduler is not None:
            elsewhere = f"a {cls.scheduler} host: its runs are batch jobs on other nodes"
        elif nodes > 1:
            elsewhere = f"it runs across {nodes} hosts"
        else:
            return None
        return (
            f"--reverse listens on 127.0.0.1 of {host} itself, and this run does not run only "
            f"there ({elsewhere}): its processes could not reach it. Leave out --reverse and "
            "point the trainer at an address its nodes reach."
        )

    def options_problem(self, p: StartParams) -> str | None:
        """Why the start's own options for this launcher cannot be honoured, in one
        sentence; None when they can."""
        return None

    def with_limits(self, p: StartParams, max_duration: int | None, retried: bool) -> StartParams:
        """The start's options as this launcher keeps the run's limits, where its runs do
        not live on the host (a scheduler's time limit, its own requeue)."""
        return p
