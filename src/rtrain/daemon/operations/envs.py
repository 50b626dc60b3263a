"""host/envs: the run environments a host caches in its work directory (docs/environments.md)."""

from __future__ import annotations

from rtrain.daemon.remote.contract.environment_scripts import list_environments
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import DEFAULT_WORKDIR, EnvironmentInfo, EnvsParams, EnvsResult

from .context import DaemonState


async def envs(ops: DaemonState, p: EnvsParams) -> EnvsResult:
    validation.host(p.host)
    workdir = validation.workdir(
        p.workdir or ops.hosts.config.host(p.host).workdir or DEFAULT_WORKDIR
    )
    transport = await ops.transport(p.host)
    listed = await list_environments(transport, workdir)
    if not listed.ok:
        raise app_error(
            Kind.REMOTE_FAILED, f"{p.host}: listing its environments failed: {listed.error_text}"
        )
    return EnvsResult(
        host=p.host,
        environments=[
            EnvironmentInfo(
                key=env.key,
                size_bytes=env.kib * 1024,
                last_used=env.last_used,
                built_at=env.built_at,
                build_seconds=env.build_seconds,
                tool=env.tool,
                python=env.python,
                used_by=env.runs,
            )
            for env in listed.environments
        ],
        building=listed.building,
    )
