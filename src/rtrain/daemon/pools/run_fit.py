"""What a pool's placement asks each host about one run (fit.sh): the python the run would
run there and whether it must find torch, the image, the environment's lock, the inputs; and
what the answer means: why the host cannot take the run, and what it already holds.

A host that refuses a run for its software (no such python, no torch, no image) is not asked
again about a run that needs the same for REFUSAL_KEPT_S: a queue polled every few seconds
does not probe a broken host each time. Free space and caches are asked every time.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from rtrain.daemon.environments.lock_file import chosen_lock, code_lock
from rtrain.daemon.environments.run_environment import builder_source
from rtrain.daemon.operations.command_template import TORCHRUN_WORD
from rtrain.daemon.operations.context import chosen
from rtrain.daemon.operations.start_plan import StartPlan
from rtrain.daemon.preflight.disk import MIN_MARGIN
from rtrain.daemon.remote.contract.fit_scripts import Fit, Needs
from rtrain.daemon.user_config import UserConfig
from rtrain.protocol import validation
from rtrain.protocol.byte_sizes import human_bytes
from rtrain.protocol.errors import RpcError
from rtrain.protocol.messages import DEFAULT_PYTHON, StartParams

# How long a host's refusal for its software stands before it is asked again.
REFUSAL_KEPT_S = 60.0


@dataclass(frozen=True)
class HostAsk:
    """fit.sh's question to one host: `refused` says why without asking (its lock cannot be
    read here)."""

    python: str
    needs: Needs
    image: tuple[str, str] | None  # (runtime, image)
    lock: bytes | None
    refused: str | None = None

    @property
    def software(self) -> tuple[str, Needs, tuple[str, str] | None]:
        """What a refusal for the host's software depends on."""
        return (self.python, self.needs, self.image)


@dataclass(frozen=True)
class RunFit:
    """The questions about one run, one per host of its pool, and its inputs."""

    asks: dict[str, HostAsk]
    inputs: tuple[tuple[str, int], ...]  # (sha256, size) of the largest
    input_bytes: int  # of every input
    has_environment: bool

    @property
    def builder(self) -> bytes:
        return builder_source()


def run_fit(
    config: UserConfig,
    hosts: Sequence[str],
    p: StartParams,
    plan: StartPlan,
    inputs: Sequence[tuple[str, int]],
) -> RunFit:
    """`p` as asked (the plan's is its first host's: its image, say, chosen)."""
    words = [*(plan.template or []), *([plan.setup] if plan.setup else [])]
    needs: Needs = "python" if plan.template is None else "-"
    if any(TORCHRUN_WORD in word for word in words):
        needs = "torch"
    elif any("{python}" in word for word in words):
        needs = "python"
    asks = {}
    for alias in hosts:
        settings = config.host(alias)
        image = p.image if p.image is not None else settings.image
        try:
            python = validation.python(chosen(p.python, settings.python, DEFAULT_PYTHON))
            lock = None
            if not image:
                chosen_one = chosen_lock(p.requirements, settings.requirements)
                if chosen_one is None and p.requirements != "":
                    chosen_one = code_lock(plan.inputs.files)
                lock = chosen_one.identity if chosen_one is not None else None
        except RpcError as error:
            asks[alias] = HostAsk("-", "-", None, None, refused=error.message.rstrip("."))
            continue
        asks[alias] = HostAsk(
            python=python,
            # In an image, {python} is the image's own: the image is what is asked about.
            needs="-" if image else needs,
            image=(settings.container_runtime, image) if image else None,
            lock=lock,
        )
    return RunFit(
        asks=asks,
        inputs=tuple(inputs),
        input_bytes=plan.inputs.total_bytes,
        has_environment=any(ask.lock is not None for ask in asks.values()),
    )


def disk_refusal(fit: Fit, input_bytes: int, workdir: str) -> str | None:
    """Too little free space for what the start would ship there (what the host's cache
    holds is not shipped), with preflight's margin."""
    if fit.free_kib is None:
        return None
    shipped = max(0, input_bytes - fit.cached_bytes)
    needed = shipped + max(input_bytes // 10, MIN_MARGIN)
    free = fit.free_kib * 1024
    if free >= needed:
        return None
    return f"only {human_bytes(free)} free in {workdir}, and the run ships {human_bytes(shipped)}"


class Refusals:
    """Hosts' refusals for their software, kept REFUSAL_KEPT_S."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str, object], tuple[float, str]] = {}

    def get(self, alias: str, workdir: str, ask: HostAsk) -> str | None:
        key = (alias, workdir, ask.software)
        kept = self._kept.get(key)
        if kept is None:
            return None
        if time.monotonic() - kept[0] > REFUSAL_KEPT_S:
            del self._kept[key]
            return None
        return kept[1]

    def keep(self, alias: str, workdir: str, ask: HostAsk, why: str) -> None:
        self._kept[(alias, workdir, ask.software)] = (time.monotonic(), why)
