"""Ship local files into a run directory, each verified by its sha256 on the far side.

`ship_files` is the one way a start puts its inputs on the host; how the bytes travel is the
transfer engine's business (daemon/transfer/shipping.py: the host's input cache first, then
verified pieces side by side).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass

from rtrain.daemon.remote.contract import file_scripts
from rtrain.daemon.transfer.shipping import Answered, Input, ship
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import CodeReport, LeftHomePath, ShippedFile, ShippedLink

from .code_tree import Link
from .run_inputs import Inputs

# A start's answer names this many of the paths left home (its totals count them all).
LEFT_HOME_LISTED = 100


class ShipProgress:
    """Bytes and files shipped so far; `changed` hears of each step."""

    def __init__(self, inputs: Inputs, changed: Callable[[ShipProgress], None]) -> None:
        self.total_bytes = inputs.total_bytes
        self.total_files = len(inputs.files)
        self.done_bytes = 0
        self.done_files = 0
        self._changed = changed

    def bytes_moved(self, count: int) -> None:
        self.done_bytes += count
        self._changed(self)

    def file_landed(self) -> None:
        self.done_files += 1
        self._changed(self)


def shipped_inputs(inputs: Inputs) -> list[Input]:
    """`inputs` as the transfer engine ships them (and the host's cache is asked for them)."""
    return [Input(f.source, f.rel) for f in inputs.files]


@dataclass(frozen=True)
class Destination:
    """A run directory on a host, as a shipment reaches it: the channels its transfers may
    open (config.toml), and the host's cache placement of the inputs where the claim's far
    call asked it already."""

    transport: Transport
    run_dir: str
    run_id: str
    channels: int | None = None
    answered: Answered | None = None


async def ship_files(to: Destination, inputs: Inputs, progress: ShipProgress) -> list[ShippedFile]:
    """Put every file of `inputs` at its place under the run directory; what landed, in input
    order. Raises the first failure (the others are stopped)."""
    transport, run_dir, run_id = to.transport, to.run_dir, to.run_id
    dirs = _empty_dirs(inputs) if transport.streams else inputs.dirs
    if dirs:
        await _tree(transport, run_dir, run_id, dirs, [], [])
    # The run directory's parent is the work directory, whose input cache the engine uses.
    shipped = await ship(
        transport,
        posixpath.dirname(run_dir),
        run_dir,
        shipped_inputs(inputs),
        progress.bytes_moved,
        channels=to.channels,
        landed=lambda _file: progress.file_landed(),
        answered=to.answered,
    )
    runnable = [f.rel for f in inputs.files if f.executable]
    # Links come last, so that no file is ever placed through one.
    links = inputs.code.links if inputs.code is not None else []
    if runnable or links:
        # Uploads land private and not executable; a script of the code keeps its x bit.
        await _tree(transport, run_dir, run_id, [], runnable, links)
    return [
        ShippedFile(path=f.name, size=f.size, sha256=f.sha256, sent_bytes=f.sent, how=f.how)  # type: ignore[arg-type]
        for f in shipped
    ]


def _empty_dirs(inputs: Inputs) -> list[str]:
    """The folders no file lands in. On a transport with streams every way a file lands
    (the cache's placement, a tree's stream, a file sent whole or in pieces) makes its
    folders, so only these need a far call of their own before the shipping: the same code
    again then makes no far call before its placement (one round trip fewer)."""
    holding: set[str] = set()
    for f in inputs.files:
        folder = posixpath.dirname(f.rel)
        while folder and folder not in holding:
            holding.add(folder)
            folder = posixpath.dirname(folder)
    return [d for d in inputs.dirs if d not in holding]


def code_report(inputs: Inputs) -> CodeReport | None:
    """What the code directory's rules left home, its links and its secret-looking files,
    as a start's answer carries them (the first paths left home, all of them counted)."""
    tree = inputs.code
    if tree is None:
        return None
    return CodeReport(
        rules=tree.rules,
        left_home=[
            LeftHomePath(path=h.path, rule=h.rule, files=h.files, size=h.size, at_least=h.more)
            for h in tree.left_home[:LEFT_HOME_LISTED]
        ],
        left_home_files=sum(h.files for h in tree.left_home),
        left_home_bytes=sum(h.size for h in tree.left_home),
        links=[ShippedLink(path=k.path, target=k.target, outside=k.outside) for k in tree.links],
        secrets=tree.secrets,
    )


async def _tree(
    transport: Transport,
    run_dir: str,
    run_id: str,
    dirs: list[str],
    executables: list[str],
    links: list[Link],
) -> None:
    done = await file_scripts.input_tree(
        transport, run_dir, run_id, dirs, executables, [(k.path, k.target) for k in links]
    )
    if not done.ok:
        why = str(done.error or "") or done.error_text
        raise app_error(
            Kind.TRANSFER_FAILED, f"{transport.alias}: preparing the run directory failed: {why}"
        )
