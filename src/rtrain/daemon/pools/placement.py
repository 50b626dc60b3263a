"""Where a run of a pool can go now: each host asked for its GPUs (one `gpus.sh look` each,
side by side), then each host with GPUs enough asked whether it can run the run and what it
holds of it (one `fit.sh` each, run_fit.py), the hosts that fit ranked, and the words that
say why.

The look only ranks; the far side's reservation (`gpus.sh reserve`) decides, so two
placements racing for the last GPU never both get it.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rtrain.daemon.operations.context import DaemonState
from rtrain.daemon.operations.local_file import LocalFile
from rtrain.daemon.remote.contract import launch_scripts
from rtrain.daemon.remote.contract.answers import Exit
from rtrain.daemon.remote.contract.fit_scripts import fit as fit_script
from rtrain.daemon.transfer.local_hashes import sha256_and_size
from rtrain.protocol.errors import RpcError
from rtrain.protocol.messages import PoolHost

from .run_fit import Refusals, RunFit, disk_refusal

# A host that does not answer its look within this long is skipped, never waited on.
LOOK_S = 20.0
# The inputs asked about in each host's cache: the largest, which decide what a start ships.
CACHE_CHECKED = 8


@dataclass(frozen=True)
class HostLook:
    """One host of a pool as its look found it: its GPUs, how many are free now; once asked
    about the run (`fitted`), why it cannot run it (`unfit`), how many of the run's inputs
    its cache holds, whether the run's environment is built there; or `error`, why it could
    not be asked."""

    alias: str
    workdir: str
    order: int  # its place in the pool's list, which breaks ties
    total: int = 0
    free: int = 0
    cached: int = 0
    inputs: int = 0
    error: str | None = None
    fitted: bool = False
    unfit: str | None = None
    env_built: bool | None = None

    def fits(self, gpus: int) -> bool:
        """Its GPUs can take the run now, and (once asked) it can run the run."""
        has_gpus = gpus == 0 or (self.total > 0 and self.free >= gpus)
        return self.error is None and self.unfit is None and has_gpus

    def taken(self, gpus: int) -> HostLook:
        """The host once `gpus` of its free GPUs went to a run placed there."""
        return replace(self, free=max(0, self.free - gpus))

    @property
    def shown(self) -> PoolHost:
        if self.error is not None:
            return PoolHost(
                alias=self.alias, reachable=False, gpus_total=0, gpus_free=0, reason=self.error
            )
        return PoolHost(
            alias=self.alias, reachable=True, gpus_total=self.total, gpus_free=self.free
        )


def input_keys(files: Sequence[LocalFile]) -> list[tuple[str, int]]:
    """(sha256, size) of the largest inputs, the keys of the hosts' caches."""
    largest = sorted(files, key=lambda f: f.size, reverse=True)[:CACHE_CHECKED]
    return [(_sha256(f.source), f.size) for f in largest]


def _sha256(source: Path | bytes) -> str:
    # The start that follows hashes the same files: remembered, it reads them only once.
    if isinstance(source, bytes):
        return hashlib.sha256(source).hexdigest()
    return sha256_and_size(source)[0]


async def look_hosts(
    ops: DaemonState,
    hosts: Sequence[str],
    workdirs: Sequence[str],
    share: bool,
    run_id: str | None,
) -> list[HostLook]:
    """Every host asked at once; one that cannot be asked carries its reason."""
    return list(
        await asyncio.gather(
            *(
                _look(ops, alias, workdir, order, share, run_id)
                for order, (alias, workdir) in enumerate(zip(hosts, workdirs, strict=True))
            )
        )
    )


async def with_fit(
    ops: DaemonState, looks: Sequence[HostLook], gpus: int, fit: RunFit, refusals: Refusals
) -> list[HostLook]:
    """The looks, each host whose GPUs can take the run asked (at once) about the run."""
    return list(
        await asyncio.gather(
            *(_fit(ops, look, fit, refusals) if look.fits(gpus) else _same(look) for look in looks)
        )
    )


async def _same(look: HostLook) -> HostLook:
    return look


async def _fit(ops: DaemonState, look: HostLook, fit: RunFit, refusals: Refusals) -> HostLook:
    ask = fit.asks[look.alias]
    look = replace(look, fitted=True, inputs=len(fit.inputs))
    why = ask.refused or refusals.get(look.alias, look.workdir, ask)
    if why is not None:
        return replace(look, unfit=why)
    builder_and_lock = (fit.builder, ask.lock) if ask.lock is not None else None
    try:
        async with asyncio.timeout(LOOK_S):
            transport = await ops.transport(look.alias)
            answer = await fit_script(
                transport, look.workdir, ask.python, ask.needs, ask.image, fit.inputs,
                builder_and_lock,
            )  # fmt: skip
    except RpcError as error:
        return replace(look, error=_first_sentence(error.message))
    except TimeoutError:
        return replace(look, error=f"no answer in {LOOK_S:.0f} s")
    if answer.exit != Exit.OK:
        return replace(look, error=answer.error_text or f"exit {answer.exit}")
    if answer.unfit:
        why = "; ".join(answer.unfit)
        refusals.keep(look.alias, look.workdir, ask, why)
        return replace(look, unfit=why)
    return replace(
        look,
        cached=answer.cached,
        env_built=answer.env_built,
        unfit=disk_refusal(answer, fit.input_bytes, look.workdir),
    )


async def _look(
    ops: DaemonState,
    alias: str,
    workdir: str,
    order: int,
    share: bool,
    run_id: str | None,
) -> HostLook:
    look = HostLook(alias=alias, workdir=workdir, order=order)
    try:
        async with asyncio.timeout(LOOK_S):
            transport = await ops.transport(alias)
            claims = await launch_scripts.gpu_claims(transport, workdir, share, run_id)
    except RpcError as error:
        return replace(look, error=_first_sentence(error.message))
    except TimeoutError:
        return replace(look, error=f"no answer in {LOOK_S:.0f} s")
    if claims.exit != Exit.OK:
        return replace(look, error=claims.error_text or f"exit {claims.exit}")
    return replace(look, total=claims.total, free=len(claims.free))


def ranked(looks: Sequence[HostLook], gpus: int) -> list[HostLook]:
    """The hosts that can take `gpus` now and run the run, best first: the one with the
    run's environment built (a build takes minutes, shipping inputs seldom does), then the
    one whose cache holds most of the inputs, then the least loaded (the largest share of
    its GPUs free), then the pool's own order."""

    def key(look: HostLook) -> tuple[int, int, float, int]:
        share_free = look.free / look.total if look.total else 1.0
        return (-int(bool(look.env_built)), -look.cached, -share_free, look.order)

    return sorted((look for look in looks if look.fits(gpus)), key=key)


def placed_words(look: HostLook, gpus: int, looks: Sequence[HostLook] = ()) -> str:
    """`placed on box2: 2 of 8 GPUs free, inputs cached, environment built; box1 cannot run
    it: python3 has no torch`."""
    if gpus == 0 or look.total == 0:
        gpu_words = "no GPU asked" if gpus == 0 else "no GPUs"
    else:
        gpu_words = f"{look.free} of {look.total} GPUs free"
    if look.inputs and look.cached == look.inputs:
        cache_words = ", inputs cached"
    elif look.cached:
        cache_words = f", {look.cached} of {look.inputs} inputs cached"
    else:
        cache_words = ""
    if look.env_built is not None:
        cache_words += ", environment built" if look.env_built else ", environment to build"
    skipped = [
        f"{other.alias} cannot run it: {other.unfit}" for other in looks if other.unfit is not None
    ]
    skipped_words = "".join(f"; {words}" for words in skipped)
    return f"placed on {look.alias}: {gpu_words}{cache_words}{skipped_words}"


def waiting_words(pool: str, looks: Sequence[HostLook], gpus: int) -> str:
    """`waiting for 2 GPUs in lab: box1 0/8 free, box2 1/8 free, pod3 unreachable`."""
    hosts = []
    for look in looks:
        if look.error is not None:
            hosts.append(f"{look.alias} unreachable")
        elif look.unfit is not None:
            hosts.append(f"{look.alias} cannot run it ({look.unfit})")
        elif look.total == 0:
            hosts.append(f"{look.alias} has no GPUs")
        else:
            hosts.append(f"{look.alias} {look.free}/{look.total} free")
    asked = "a host" if gpus == 0 else f"{gpus} GPU{'s' if gpus != 1 else ''}"
    return f"waiting for {asked} in {pool}: {', '.join(hosts)}"


def never_fits(looks: Sequence[HostLook], gpus: int) -> bool:
    """Every host answered and none has that many GPUs at all: waiting would be forever."""
    return all(look.error is None for look in looks) and all(look.total < gpus for look in looks)


def none_can_run(looks: Sequence[HostLook]) -> bool:
    """Every host was asked about the run and refused it: waiting would not help."""
    return all(look.fitted and look.unfit is not None for look in looks)


def _first_sentence(message: str) -> str:
    return message.split(". ", 1)[0].rstrip(".")
