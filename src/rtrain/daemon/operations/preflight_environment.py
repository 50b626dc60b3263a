"""Preflight's part of environments (`--requirements`): the lock's environment built on the
host now, as a start would build it, or found built; a failed build is a problem naming the
lock's line (docs/environments.md)."""

from __future__ import annotations

from rtrain.daemon.environments.lock_file import EnvironmentLock
from rtrain.daemon.environments.run_environment import builder_source, lock_file
from rtrain.daemon.remote.contract.environment_scripts import EnvironmentFiles, check_environment
from rtrain.daemon.ssh.transport import Transport
from rtrain.protocol.messages import Finding


async def judge_environment(
    transport: Transport, workdir: str, python: str, lock: EnvironmentLock
) -> tuple[list[Finding], str | None]:
    """The findings, and the problem (None when the environment is there now)."""
    files = EnvironmentFiles(name=lock_file(lock), content=lock.content, pyproject=lock.pyproject)
    checked = await check_environment(transport, workdir, python, builder_source(), files)
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
