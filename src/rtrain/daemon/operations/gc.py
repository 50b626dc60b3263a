"""host/gc: free the host's input cache of what no run uses, and of cut uploads left behind;
the environments no run directory uses (docs/environments.md);
and, on this machine, the partial data that cut fetches from the host left (partial_book.py)."""

from __future__ import annotations

from rtrain.daemon.remote.contract import file_scripts
from rtrain.daemon.remote.contract.environment_scripts import collect_environments
from rtrain.daemon.transfer import partial_book
from rtrain.daemon.transfer.partial import in_use
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import DEFAULT_WORKDIR, GcParams, GcResult

from .context import DaemonState


async def gc(ops: DaemonState, p: GcParams) -> GcResult:
    validation.host(p.host)
    workdir = validation.workdir(
        p.workdir or ops.hosts.config.host(p.host).workdir or DEFAULT_WORKDIR
    )
    transport = await ops.transport(p.host)
    done = await file_scripts.gc_cache(transport, workdir)
    if not done.ok:
        raise app_error(
            Kind.REMOTE_FAILED, f"{p.host}: cleaning the input cache failed: {done.error_text}"
        )
    assert done.freed_bytes is not None and done.entries is not None
    assert done.partials is not None
    collected = await collect_environments(transport, workdir)
    if not collected.ok:
        raise app_error(
            Kind.REMOTE_FAILED,
            f"{p.host}: removing unused environments failed: {collected.error_text}",
        )
    assert collected.freed_kib is not None and collected.removed is not None
    environment_bytes = collected.freed_kib * 1024
    swept, freed_here = partial_book.sweep(p.host, in_use)
    return GcResult(
        host=p.host,
        freed_bytes=done.freed_bytes + environment_bytes,
        entries=done.entries,
        partials=done.partials,
        local_partials=swept,
        local_freed_bytes=freed_here,
        environments_removed=collected.removed,
        environment_bytes=environment_bytes,
    )
