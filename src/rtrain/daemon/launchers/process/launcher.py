"""The `process` launcher: the run is a detached session on the host (launch.sh, setsid),
found again by the RTRAIN_RUN_ID marker in its processes' environment."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rtrain.daemon.launchers.over_transport import OverTransport
from rtrain.daemon.remote.contract import launch_scripts, run_scripts
from rtrain.daemon.remote.contract.launch_scripts import LaunchAhead, Launched
from rtrain.daemon.remote.contract.run_scripts import StatusReport, StopReport
from rtrain.protocol.messages import RunLauncher, StartParams


class ProcessLauncher(OverTransport):
    # Annotated, so that launchers built on this one (torchrun) take names of their own.
    name: ClassVar[RunLauncher] = "process"
    runs_torchrun = False
    launches_ahead = True

    @classmethod
    def claims_command(cls, command: Sequence[str] | None) -> bool:
        return True  # the host's own runs that no other launcher claims

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
        transport = await self.transport()
        if ahead is not None and ahead.waiting and ahead.transport is transport:
            return await ahead.go(run_dir, run_id, python, command, secrets)
        return await launch_scripts.launch(transport, run_dir, run_id, python, command, secrets)

    async def status(self, workdir: str, run_ids: Sequence[str]) -> StatusReport:
        return await run_scripts.status(await self.transport(), workdir, run_ids)

    async def stop(self, run_dir: str, run_id: str, grace: float, force: bool) -> StopReport:
        return await run_scripts.stop(await self.transport(), run_dir, run_id, grace, force)
