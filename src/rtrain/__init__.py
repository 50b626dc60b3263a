"""rtrain: train on a remote GPU host over plain SSH.

The Python API (`RemoteRunner` and friends) is imported lazily so that `import rtrain`
stays cheap for the CLI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rtrain.protocol.version import RTRAIN_VERSION as __version__

if TYPE_CHECKING:
    from rtrain.client.api import (
        AuthFailed,
        BadRequest,
        DaemonMismatch,
        DaemonUnavailable,
        DiskFull,
        HostBusy,
        HostKeyChanged,
        HostNotReady,
        HostRefused,
        HostUnreachable,
        InvalidCommand,
        InvalidHost,
        InvalidModel,
        InvalidPath,
        InvalidRequirement,
        InvalidRunId,
        InvalidSecret,
        InvalidWorkdir,
        LocalFileMissing,
        LocalIo,
        LoginRequired,
        NotARun,
        NoTerminateCommand,
        NotFound,
        NotImplementedByDaemon,
        OperationFailed,
        PathOutsideRun,
        PortInUse,
        PortNotListening,
        ProtocolVersionMismatch,
        RemoteError,
        RemoteFailed,
        RemoteFileMissing,
        RemoteHost,
        RemotePreflight,
        RemoteRun,
        RemoteRunner,
        RtrainError,
        RunActive,
        RunExists,
        RunNotFound,
        RunRefused,
        StopRefused,
        TimedOut,
        TransferFailed,
    )
    from rtrain.client.sweep_api import RemoteSweep, sweep
    from rtrain.protocol.launcher_options import (
        NodesOptions,
        ProcessOptions,
        SlurmOptions,
        TorchrunOptions,
    )

__all__ = [
    "AuthFailed",
    "BadRequest",
    "DaemonMismatch",
    "DaemonUnavailable",
    "DiskFull",
    "HostBusy",
    "HostKeyChanged",
    "HostNotReady",
    "HostRefused",
    "HostUnreachable",
    "InvalidCommand",
    "InvalidHost",
    "InvalidModel",
    "InvalidPath",
    "InvalidRequirement",
    "InvalidRunId",
    "InvalidSecret",
    "InvalidWorkdir",
    "LocalFileMissing",
    "LocalIo",
    "LoginRequired",
    "NoTerminateCommand",
    "NodesOptions",
    "NotARun",
    "NotFound",
    "NotImplementedByDaemon",
    "OperationFailed",
    "PathOutsideRun",
    "PortInUse",
    "PortNotListening",
    "ProcessOptions",
    "ProtocolVersionMismatch",
    "RemoteError",
    "RemoteFailed",
    "RemoteFileMissing",
    "RemoteHost",
    "RemotePreflight",
    "RemoteRun",
    "RemoteRunner",
    "RemoteSweep",
    "RtrainError",
    "RunActive",
    "RunExists",
    "RunNotFound",
    "RunRefused",
    "SlurmOptions",
    "StopRefused",
    "TimedOut",
    "TorchrunOptions",
    "TransferFailed",
    "__version__",
    "sweep",
]


# Each launcher's options for RemoteRunner.start(launcher=...): the start message's own Structs.
_LAUNCHER_OPTIONS = ("NodesOptions", "ProcessOptions", "SlurmOptions", "TorchrunOptions")
# A sweep of runs in a pool, and its handle.
_SWEEPS = ("RemoteSweep", "sweep")


def __getattr__(name: str) -> Any:
    if name in _LAUNCHER_OPTIONS:
        from rtrain.protocol import launcher_options

        return getattr(launcher_options, name)
    if name in _SWEEPS:
        from rtrain.client import sweep_api

        return getattr(sweep_api, name)
    if name in __all__:
        from rtrain.client import api

        return getattr(api, name)
    raise AttributeError(f"module 'rtrain' has no attribute {name!r}")
