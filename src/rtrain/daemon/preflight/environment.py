"""Preflight's part of environments (`--requirements`): the lock's environment built on the
host now, as a start would build it, or found built; a failed build is a problem naming the
lock's line (docs/environments.md)."""

from __future__ import annotations

import asyncio
import time
from typing import Literal

from rtrain.daemon.environments.lock_file import EnvironmentLock
from rtrain.daemon.environments.run_environment import builder_source, lock_file
from rtrain.daemon.operations.notifier import Notifier
from rtrain.daemon.remote.contract.environment_scripts import (
    EnvironmentChecked,
    EnvironmentFiles,
    check_environment,
)
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol.messages import Finding, ProgressParams, ProgressValue

# How often a preflight that builds says how long it has been at it.
PROGRESS_EVERY_S = 2.0


async def judge_environment(
    transport: Transport,
    workdir: str,
    python: str,
    lock: EnvironmentLock,
    progress: tuple[Notifier, str | int] | None = None,
) -> tuple[list[Finding], str | None]:
    """The findings, and the problem (None when the environment is there now). `progress`:
    where `$/progress` goes while the host builds it (or waits for another builder)."""
    files = EnvironmentFiles(name=lock_file(lock), content=lock.content, pyproject=lock.pyproject)
    build = asyncio.ensure_future(
        check_environment(transport, workdir, python, builder_source(), files)
    )
    try:
        await _reporting(build, progress, f"Environment of {lock.source}")
        checked = build.result()
    finally:
        build.cancel()
    if checked.built_seconds is not None:
        said = (
            f"{checked.key} built now from {lock.source} in {checked.built_seconds:.1f} s "
            f"with {checked.tool}; starts with it install nothing"
        )
        return [Finding("environment", said)], None
    if checked.ok:
        said = f"{checked.key} from {lock.source} is built already; starts install nothing"
        return [Finding("environment", said)], None
    if checked.failed:
        return [], f"environment: {checked.failed}"
    return [], f"the environment of {lock.source} could not be built: {checked.error_text}"


async def _reporting(
    build: asyncio.Future[EnvironmentChecked],
    progress: tuple[Notifier, str | int] | None,
    title: str,
) -> None:
    """Waits for the build, saying every few seconds how long it has taken so far."""
    if progress is None:
        await asyncio.wait({build})
        return
    ctx, token = progress
    began = time.monotonic()

    def say(kind: Literal["begin", "report", "end"], message: str | None) -> None:
        value = ProgressValue(kind=kind, title=title, message=message)
        ctx.notify("$/progress", ProgressParams(token=token, value=value))

    say("begin", "building it on the host, or finding it built")
    while not (await asyncio.wait({build}, timeout=PROGRESS_EVERY_S))[0]:
        elapsed = time.monotonic() - began
        say("report", f"building it, or waiting for another start's build: {elapsed:.0f} s so far")
    say("end", None)
