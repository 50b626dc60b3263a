"""JSON-RPC error codes, rtrain's stable error kinds, and the exceptions the protocol raises.

Two families, as in h11: a `LocalProtocolError` means this side misused the API; a
`RemoteProtocolError` means the peer broke the protocol and the connection cannot go on.
`RpcError` is an error *response*: something to send to, or received from, the peer.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002
REQUEST_CANCELLED = -32800
# Every rtrain application error uses this code; `data.kind` says which one it is.
APPLICATION_ERROR = -32000

# The codes by name, as the published schema lists them (`errorCodes`).
CODES: dict[str, int] = {
    "parseError": PARSE_ERROR,
    "invalidRequest": INVALID_REQUEST,
    "methodNotFound": METHOD_NOT_FOUND,
    "invalidParams": INVALID_PARAMS,
    "internalError": INTERNAL_ERROR,
    "serverNotInitialized": SERVER_NOT_INITIALIZED,
    "requestCancelled": REQUEST_CANCELLED,
    "applicationError": APPLICATION_ERROR,
}


class Kind(StrEnum):
    """Stable machine-readable values of `error.data.kind`. Clients switch on these.

    The published schema lists them (`errorKinds`), and the extension's types are generated
    from it, so this enum is the one list.
    """

    NOT_IMPLEMENTED = "not_implemented"
    PROTOCOL_VERSION_MISMATCH = "protocol_version_mismatch"
    INVALID_HOST = "invalid_host"
    INVALID_RUN_ID = "invalid_run_id"
    INVALID_WORKDIR = "invalid_workdir"
    INVALID_PATH = "invalid_path"
    INVALID_COMMAND = "invalid_command"
    INVALID_SECRET = "invalid_secret"
    INVALID_REQUIREMENT = "invalid_requirement"
    INVALID_MODEL = "invalid_model"
    LOCAL_FILE_MISSING = "local_file_missing"
    PATH_OUTSIDE_RUN = "path_outside_run"
    HOST_UNREACHABLE = "host_unreachable"
    AUTH_FAILED = "auth_failed"
    # The host asks for a password, a second factor or a passphrase, which the daemon never
    # types, and no `rtrain login HOST` connection is live: the sentence names that command.
    LOGIN_REQUIRED = "login_required"
    HOST_KEY_CHANGED = "host_key_changed"
    HOST_NOT_READY = "host_not_ready"
    RUN_EXISTS = "run_exists"
    RUN_NOT_FOUND = "run_not_found"
    REMOTE_FILE_MISSING = "remote_file_missing"
    # forwards/open: the local port asked for is taken on this machine.
    PORT_IN_USE = "port_in_use"
    # forwards/open: nothing listens on the host's port (or its sshd forwards no ports).
    PORT_NOT_LISTENING = "port_not_listening"
    TRANSFER_FAILED = "transfer_failed"
    DISK_FULL = "disk_full"
    STOP_REFUSED = "stop_refused"
    # The run is running (or queued, or being started): restart and rm refuse it.
    RUN_ACTIVE = "run_active"
    # host/terminate: a run is running, queued or in setup, or a transfer is in flight
    # (`data.busy` says which); `force` runs the command anyway.
    HOST_BUSY = "host_busy"
    # host/terminate: neither config.toml's `terminate` nor an armed guard names a command.
    NO_TERMINATE_COMMAND = "no_terminate_command"
    # The directory a run id and workdir name is not a run of rtrain's (no mark, no meta.json
    # naming the run): nothing in it was deleted, killed or read.
    NOT_A_RUN = "not_a_run"
    REMOTE_FAILED = "remote_failed"
    TIMEOUT = "timeout"
    # This machine's own disk refused (a directory that cannot be made, a full disk, a
    # permission): the user's to fix, never an internal error.
    LOCAL_IO = "local_io"


# Kinds that mean "the request itself is wrong" (the CLI exits 2), as opposed to "it failed".
BAD_INPUT_KINDS: frozenset[Kind] = frozenset(
    {
        Kind.INVALID_HOST,
        Kind.INVALID_RUN_ID,
        Kind.INVALID_WORKDIR,
        Kind.INVALID_PATH,
        Kind.INVALID_COMMAND,
        Kind.INVALID_SECRET,
        Kind.INVALID_REQUIREMENT,
        Kind.INVALID_MODEL,
        Kind.LOCAL_FILE_MISSING,
        Kind.PATH_OUTSIDE_RUN,
        Kind.RUN_EXISTS,
        Kind.NOT_A_RUN,
        Kind.NO_TERMINATE_COMMAND,
        Kind.PORT_IN_USE,
    }
)


class RpcError(Exception):
    """An error response: `code`, a one-sentence `message`, and optional `data`.

    Raise it from a request handler to answer with it; clients receive it back.
    """

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    @property
    def kind(self) -> Kind | None:
        """The error's `data.kind`; None when it has none this version knows."""
        kind = (self.data or {}).get("kind")
        try:
            return Kind(kind) if isinstance(kind, str) else None
        except ValueError:
            return None

    def __repr__(self) -> str:
        return f"RpcError({self.code}, {self.message!r}, {self.data!r})"


def app_error(kind: Kind, message: str, **data: Any) -> RpcError:
    """An application error with a stable `data.kind`, e.g. app_error(Kind.RUN_EXISTS, ...)."""
    return RpcError(APPLICATION_ERROR, message, {"kind": kind, **data})


class ProtocolError(Exception):
    """Base of the protocol's own failures."""


class LocalProtocolError(ProtocolError):
    """This side used the Connection wrongly (e.g. answered a request twice)."""


class RemoteProtocolError(ProtocolError):
    """The peer sent something that cannot be framed; the connection must be closed.

    `reply` holds the error response to send before closing, when one is owed.
    """

    def __init__(self, message: str, reply: RpcError | None = None) -> None:
        super().__init__(message)
        self.reply = reply
