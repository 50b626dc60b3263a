"""The `exec` transport: each script is `ssh host sh -c SCRIPT rtrain ARGS...` via the master."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from .control_master import ControlMaster
from .failures import classify
from .transport import ProcessTransport


class ExecTransport(ProcessTransport):
    kind = "exec"

    def __init__(self, alias: str, runtime_dir: Path, config: Path | None) -> None:
        self.alias = alias
        self.master = ControlMaster(alias, runtime_dir, config)

    async def connect(self) -> None:
        await self.master.ensure()

    def _argv(self, text: str, args: Sequence[str]) -> list[str]:
        # Every word is quoted for the remote login shell; the script itself reads its
        # arguments as "$1"... so no value is ever parsed as shell syntax.
        return self.master.command_argv(shlex.join(["sh", "-c", text, "rtrain", *args]))

    def _check_transport_failure(self, returncode: int, stderr: bytes) -> None:
        if returncode == 255:
            raise classify(self.alias, stderr.decode(errors="replace"), returncode)

    async def close(self) -> None:
        await self.master.close()

    @property
    def state(self) -> str:
        return self.master.state

    @property
    def last_error(self) -> str | None:
        return self.master.last_error
