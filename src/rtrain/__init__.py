"""rtrain: train on a remote GPU host over plain SSH.

The Python API (`RemoteRunner` and friends) is imported lazily so that `import rtrain`
stays cheap for the CLI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rtrain.protocol.version import RTRAIN_VERSION as __version__

if TYPE_CHECKING:
    from rtrain.client.api import (
        DaemonUnavailable,
        HostNotReady,
        HostUnreachable,
        RemoteError,
        RemoteHost,
        RemotePreflight,
        RemoteRun,
        RemoteRunner,
        RtrainError,
        RunRefused,
    )
    from rtrain.protocol.launcher_options import (
        NodesOptions,
        ProcessOptions,
        SlurmOptions,
        TorchrunOptions,
    )

__all__ = [
    "DaemonUnavailable",
    "HostNotReady",
    "HostUnreachable",
    "NodesOptions",
    "ProcessOptions",
    "RemoteError",
    "RemoteHost",
    "RemotePreflight",
    "RemoteRun",
    "RemoteRunner",
    "RtrainError",
    "RunRefused",
    "SlurmOptions",
    "TorchrunOptions",
    "__version__",
]


# Each launcher's options for RemoteRunner.start(launcher=...): the start message's own Structs.
_LAUNCHER_OPTIONS = ("NodesOptions", "ProcessOptions", "SlurmOptions", "TorchrunOptions")


def __getattr__(name: str) -> Any:
    if name in _LAUNCHER_OPTIONS:
        from rtrain.protocol import launcher_options

        return getattr(launcher_options, name)
    if name in __all__:
        from rtrain.client import api

        return getattr(api, name)
    raise AttributeError(f"module 'rtrain' has no attribute {name!r}")
