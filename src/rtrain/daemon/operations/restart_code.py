"""A restart with the fix: the code directory compared with what the run was shipped (the
sha256s its meta.json records under `inputs`), and only the files that differ shipped into
the run directory, over the old ones; the run's outputs and checkpoints stay. A restart
without new code still compares, where the run recorded its code directory and this
machine has it, so the user hears that the run will not run what they see."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from pathlib import Path

from rtrain.daemon.transports.transport import Transport
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import ShippedFile

from .command_template import CONFIG_NAME
from .run_inputs import Inputs, InputSources, gather
from .shipping import Destination, ShipProgress, ship_files
from .start_plan import code_directory


async def changed_code(directory: Path, shipped: dict[str, str], reserved: set[str]) -> Inputs:
    """The files of `directory` (its ignore rules applied, as a start ships it) whose
    content is not what the run was shipped under their names."""
    sources = InputSources(
        config=None,
        config_name=CONFIG_NAME,
        datasets=[],
        code=directory,
        extra={},
        reserved=reserved,
    )
    inputs = await asyncio.to_thread(gather, sources)
    changed = []
    for file in inputs.files:
        if shipped.get(file.rel) != await asyncio.to_thread(_sha256, file.source):
            changed.append(file)
    parents = {f.rel.rsplit("/", 1)[0] for f in changed if "/" in f.rel}
    dirs = [d for d in inputs.dirs if any(p == d or p.startswith(d + "/") for p in parents)]
    return Inputs(files=changed, dirs=dirs)


async def ship_changed(
    transport: Transport, run_dir: str, run_id: str, changed: Inputs, channels: int | None
) -> list[ShippedFile]:
    if not changed.files:
        return []
    progress = ShipProgress(changed, lambda _done: None)
    return await ship_files(Destination(transport, run_dir, run_id, channels), changed, progress)


def _sha256(source: Path | bytes) -> str:
    if isinstance(source, bytes):
        return hashlib.sha256(source).hexdigest()
    digest = hashlib.sha256()
    with source.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class RunPlace:
    """Where a restart's code goes: the run's directory on its host."""

    transport: Transport
    run_dir: str
    run_id: str
    channels: int | None = None


class CodeForRestart:
    """What a restart did with the code: the run's inputs as its meta.json records them now,
    the files it shipped (`--code`), and the files that differ from what the run holds
    (a dry run with `--code`, or a restart without it whose recorded code dir differs)."""

    def __init__(
        self,
        inputs: dict[str, str],
        directory: str | None,
        shipped: list[str] | None = None,
        differs: list[str] | None = None,
    ) -> None:
        self.inputs = inputs
        self.directory = directory
        self.shipped = shipped or []
        self.differs = differs or []


async def code_for_restart(
    place: RunPlace,
    asked: str | None,
    recorded: tuple[dict[str, str], str | None],
    reserved: set[str],
    *,
    dry_run: bool = False,
) -> CodeForRestart:
    """`asked`: the restart's code directory; `recorded`: the run's inputs and its code dir."""
    inputs, recorded_dir = recorded
    if asked is None:
        if recorded_dir is None or not Path(recorded_dir).is_dir():
            return CodeForRestart(inputs, recorded_dir)
        try:
            changed = await changed_code(Path(recorded_dir), inputs, reserved)
        except (OSError, RpcError):
            return CodeForRestart(inputs, recorded_dir)  # a note only: never a refusal
        return CodeForRestart(inputs, recorded_dir, differs=[f.rel for f in changed.files])
    directory = code_directory(asked)
    try:
        changed = await changed_code(directory, inputs, reserved)
    except OSError as error:
        raise app_error(
            Kind.LOCAL_IO,
            f"cannot read the code directory {asked!r}: {error.strerror or error}; "
            "nothing was restarted.",
        ) from None
    if dry_run:
        return CodeForRestart(inputs, str(directory), differs=[f.rel for f in changed.files])
    shipped = await ship_changed(
        place.transport, place.run_dir, place.run_id, changed, place.channels
    )
    landed = {f.path: f.sha256 for f in shipped}
    return CodeForRestart({**inputs, **landed}, str(directory), shipped=list(landed))
