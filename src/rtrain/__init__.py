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
    "NotARun",
    "NotFound",
    "NotImplementedByDaemon",
    "OperationFailed",
    "PathOutsideRun",
    "PortInUse",
    "PortNotListening",
    "ProtocolVersionMismatch",
    "RemoteError",
    "RemoteFailed",
    "RemoteFileMissing",
    "RemoteHost",
    "RemotePreflight",
    "RemoteRun",
    "RemoteRunner",
    "RtrainError",
    "RunActive",
    "RunExists",
    "RunNotFound",
    "RunRefused",
    "StopRefused",
    "TimedOut",
    "TransferFailed",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from rtrain.client import api

        return getattr(api, name)
    raise AttributeError(f"module 'rtrain' has no attribute {name!r}")
