"""The `process` launcher: the run is a detached session on the host (launch.sh, setsid),
found again by the RTRAIN_RUN_ID marker in its processes' environment."""

from __future__ import annotations

from collections.abc import Sequence

from rtrain.daemon.remote import contract
from rtrain.daemon.remote.contract import Launched, StatusReport, StopReport
from rtrain.daemon.ssh.transport import Transport
from rtrain.protocol.messages import RunLauncher, StartParams

from .launcher import Launcher


class ProcessLauncher(Launcher):
    name: RunLauncher = "process"

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
        return await contract.launch(transport, run_dir, run_id, python, command, secrets)

    async def status(
        self, transport: Transport, workdir: str, run_ids: Sequence[str]
    ) -> StatusReport:
        return await contract.status(transport, workdir, run_ids)

    async def stop(
        self, transport: Transport, run_dir: str, run_id: str, grace: float, force: bool
    ) -> StopReport:
        return await contract.stop(transport, run_dir, run_id, grace, force)


PROCESS = ProcessLauncher()
