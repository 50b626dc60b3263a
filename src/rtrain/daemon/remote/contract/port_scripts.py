"""A TCP port free on the host (scripts/free_port.sh), with its typed answer: for a run across
hosts' rendezvous and for the host's TensorBoard."""

from __future__ import annotations

from .answers import Answer, Exit, Lines, Runner, as_int


class FreePort(Answer, frozen=True, kw_only=True):
    """A TCP port free on the host a moment ago (None: why is in `error`)."""

    port: int | None
    error: list[str]


async def free_port(transport: Runner, python: str) -> FreePort:
    done = await transport.run("free_port", [python], timeout=60)
    lines = Lines(done.stdout)
    port = as_int(lines.value("port")) if done.returncode == Exit.OK else None
    return FreePort(
        port=port,
        error=lines.last("error") or [],
        exit=done.returncode,
        error_text=done.error_text,
    )
