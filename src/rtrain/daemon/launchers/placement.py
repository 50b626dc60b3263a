"""Where a launcher's runs go, and what it may use to get there."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from rtrain.daemon.transports.transport import Transport
from rtrain.daemon.user_config import HostSettings
from rtrain.protocol.messages import RunNode

# A host reached by its alias, for launchers that run far-side scripts there.
Connect = Callable[[str], Awaitable[Transport]]
# A host's address as ssh resolves its alias (HostName), for other hosts to reach it.
Resolve = Callable[[str], Awaitable[str]]


@dataclass(frozen=True)
class Placement:
    # The host a run is recorded under (node 0 of a run across hosts), and its config.toml.
    host: str
    settings: HostSettings
    connect: Connect
    resolve: Resolve
    # A run across hosts: every node, node 0 first; and the address the others reach it at.
    nodes: tuple[RunNode, ...] = ()
    master_addr: str | None = None
