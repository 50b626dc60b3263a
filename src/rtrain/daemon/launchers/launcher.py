"""What the operations ask of a launcher: start a run, say how runs stand, stop one.

A transport says how a host is reached (exec, console, local); a launcher says how a run is
run there: `process` (a detached session under setsid) today, and a torchrun or Slurm
launcher beside it. A launcher works through any transport, only by far-side scripts of
the contract (rtrain.daemon.remote.contract), so the two vary independently.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from rtrain.daemon.remote.contract import Launched, StatusReport, StopReport
from rtrain.daemon.ssh.transport import Transport
from rtrain.protocol.messages import PreflightParams, RunLauncher, StartParams

from .slurm_preflight import ClusterVerdict


class Launcher(ABC):
    # The name a run records (RunInfo.launcher), so every later operation on it uses the
    # same launcher (Ops.run_launcher).
    name: RunLauncher
    # Whether a run's processes live on the host rtrain reaches, so that the monitor's
    # watch.sh (which reads states from the processes themselves) tells how the run stands.
    # A scheduler's runs live elsewhere: their states come from `status`.
    runs_on_host: bool = True
    # Whether the run's state is what `status` says rather than what watch.sh reads on the
    # host rtrain reaches: a scheduler's jobs, and a run across hosts (every node's state).
    states_from_status: bool = False
    # Seconds a stop waits after SIGTERM when the user gives no --grace.
    default_grace: float = 10.0

    @abstractmethod
    async def launch(
        self,
        transport: Transport,
        run_dir: str,
        run_id: str,
        python: str,
        command: Sequence[str],
        secrets: bytes,
        params: StartParams | None = None,
    ) -> Launched:
        """Start `command` in the prepared `run_dir`, detached from the connection, with
        `secrets` (`NAME<TAB>base64` lines) in its environment; `params` are the start's own
        options (GPUs, a scheduler's time limit...). Safe to ask twice: a second
        launch of the same run is `already_launched`, never a second trainer."""

    @abstractmethod
    async def status(
        self, transport: Transport, workdir: str, run_ids: Sequence[str]
    ) -> StatusReport:
        """How each run of `workdir` stands, in one far-side command for all of them."""

    @abstractmethod
    async def stop(
        self, transport: Transport, run_dir: str, run_id: str, grace: float, force: bool
    ) -> StopReport:
        """Stop every process of the run (TERM, `grace` seconds, then KILL if `force`), and
        say `stopped` only once nothing of it is left."""

    async def scheduler_preflight(
        self, transport: Transport, p: PreflightParams, workdir: str
    ) -> ClusterVerdict | None:
        """What the scheduler behind this launcher offers a run of `p`, for host/preflight;
        None where runs live on the host itself (its own GPUs and python are the verdict)."""
        return None

    def scheduler_problem(self, p: StartParams) -> str | None:
        """Why the start's scheduler options (--time, --partition, --nodes, ...) cannot be
        honoured, in one sentence; None when they can. A host's own runs take none."""
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
        if not given:
            return None
        return (
            f"{', '.join(given)} apply to Slurm hosts only, and {p.host} is not one "
            f'(set scheduler = "slurm" under [hosts.{p.host}] in config.toml).'
        )
