"""The address an alias names, as ssh itself resolves it (`ssh -G`): HostName, Match and
Include rules applied, so other nodes of a run reach the first where the daemon does."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rtrain.protocol.errors import Kind, app_error


async def resolved_hostname(alias: str, config: Path | None) -> str:
    """`hostname` of `ssh -G ALIAS` (the alias itself where the config names none)."""
    argv = ["ssh", *(["-F", str(config)] if config else []), "-G", alias]
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 10)
    except (OSError, TimeoutError) as error:
        raise app_error(
            Kind.HOST_UNREACHABLE, f"could not ask ssh for the address of {alias}: {error}"
        ) from None
    for line in out.decode(errors="replace").splitlines():
        key, _, value = line.partition(" ")
        if key == "hostname" and value.strip():
            return value.strip()
    why = err.decode(errors="replace").strip().splitlines()[-1:] or ["no hostname"]
    raise app_error(
        Kind.HOST_UNREACHABLE,
        f"ssh -G {alias} names no address ({why[0]}); give --master-addr.",
    )
