"""The `exec` transport: each script is `ssh host sh -c SCRIPT rtrain ARGS...` via the master."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from rtrain.protocol.errors import Kind, app_error

from .control_master import ControlMaster
from .failures import classify
from .transport import ProcessTransport

# What a command's ssh says when its master went away under it, and when it then refuses to
# connect on its own (ProxyCommand=false, see ControlMaster.command_argv).
MASTER_GONE = "read from master failed"
NO_FALLBACK = "Connection closed by UNKNOWN port 65535"


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
        if returncode != 255:
            return
        text = stderr.decode(errors="replace")
        if not text.strip() or MASTER_GONE in text or NO_FALLBACK in text:
            # The master died under the command (the link was cut or timed out); its own
            # last words say why better than the command's empty stderr.
            why = self.master.last_error or "the ssh connection dropped"
            raise app_error(
                Kind.HOST_UNREACHABLE,
                f"host unreachable: {self.alias}: the connection dropped ({why.strip()})",
                detail=text.strip()[-300:] or None,
            )
        raise classify(self.alias, text, returncode)

    async def close(self) -> None:
        await self.master.close()

    @property
    def state(self) -> str:
        return self.master.state

    @property
    def last_error(self) -> str | None:
        return self.master.last_error
