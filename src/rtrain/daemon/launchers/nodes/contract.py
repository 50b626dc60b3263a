"""The nodes launcher's own far-side script (scripts/free_port.sh), with its typed answer."""

from __future__ import annotations

from rtrain.daemon.remote.contract.answers import Answer, Exit, Lines, as_int
from rtrain.daemon.ssh.transport import Transport


class FreePort(Answer, frozen=True, kw_only=True):
    """A TCP port free on the host a moment ago (None: why is in `error`)."""

    port: int | None
    error: list[str]


async def free_port(transport: Transport, python: str) -> FreePort:
    done = await transport.run("launchers.nodes:free_port", [python], timeout=60)
    lines = Lines(done.stdout)
    port = as_int(lines.value("port")) if done.returncode == Exit.OK else None
    return FreePort(
        port=port,
        error=lines.last("error") or [],
        exit=done.returncode,
        error_text=done.error_text,
    )
