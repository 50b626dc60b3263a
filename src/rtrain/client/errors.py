"""Errors a caller of the client can catch, each carrying the one sentence a user needs.

Every error kind of the protocol (`Kind`) has a class of its own, under the class of its
meaning: catch `HostUnreachable` for "the host did not answer, ask again later", or
`AuthFailed` for that one cause. A kind this version does not know (a newer daemon) is a
plain RemoteError whose `kind` is None and whose `kind_name` is the word as sent.
"""

from __future__ import annotations

from typing import Any

from rtrain.protocol.errors import Kind


class RtrainError(Exception):
    """Base of every error the client raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class DaemonUnavailable(RtrainError):
    """No daemon answered and none could be started (or starting was turned off)."""


class DaemonProtocolError(RtrainError):
    """The daemon broke the protocol, or the connection to it broke mid-conversation."""

    @classmethod
    def lost(cls, error: OSError) -> DaemonProtocolError:
        return cls(f"Lost the connection to the daemon: {error}.")

    @classmethod
    def closed(cls) -> DaemonProtocolError:
        return cls(
            "The daemon closed the connection (it may have stopped or crashed; "
            "see `rtrain daemon logs`)."
        )

    @classmethod
    def garbage(cls, reason: str) -> DaemonProtocolError:
        return cls(f"The daemon sent garbage: {reason}.")


class RemoteError(RtrainError):
    """The daemon refused or failed an operation; `kind` is the stable error kind (None
    for a kind this version does not know: `kind_name` has it as sent)."""

    def __init__(
        self,
        message: str,
        kind: Kind | str | None = None,
        code: int | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: Kind | None = _known(kind)
        self.kind_name: str | None = str(kind) if kind is not None else None
        self.code = code
        self.data: dict[str, Any] = data or {}


def _known(kind: Kind | str | None) -> Kind | None:
    try:
        return Kind(kind) if kind is not None else None
    except ValueError:
        return None


# ---- the meanings ---------------------------------------------------------------------


class BadRequest(RemoteError):
    """The request itself is wrong (a name, a path, a command the daemon refuses), and
    nothing was done: fix the input and ask again."""


class HostUnreachable(RemoteError):
    """The host did not answer: unreachable, timed out, or it refused the login (kinds
    `host_unreachable`, `timeout`, `auth_failed`, `host_key_changed`). Whatever was asked
    may be asked again once it answers."""


class LoginRequired(RemoteError):
    """The host asks for a password, a second factor or a passphrase, which the daemon
    never types: run `rtrain login HOST` first (kind `login_required`)."""


class HostNotReady(RemoteError):
    """The host answered but cannot take the run as asked (kind `host_not_ready`): too few
    GPUs free (`data.holders` names the runs that hold them), a tool it lacks..."""


class HostRefused(RemoteError):
    """The host answered but cannot do this now (kinds `host_busy`, `port_not_listening`,
    `disk_full`): what it needs is in the sentence."""


class RunRefused(RemoteError):
    """The run cannot be acted on as asked, and nothing was done (kinds `run_active`,
    `run_exists`, `stop_refused`, `not_a_run`): stop it first, pick another run id, check
    the run id and workdir."""


class NotFound(RemoteError):
    """What was named is not there: the run (`run_not_found`) or a file of it
    (`remote_file_missing`)."""


class OperationFailed(RemoteError):
    """The operation began and failed on the way (kinds `remote_failed`, `transfer_failed`,
    `local_io`): the sentence says where; what was there before is kept."""


class DaemonMismatch(RemoteError):
    """The daemon does not do what this client asks (kinds `not_implemented`,
    `protocol_version_mismatch`): a daemon of another version answered."""


# ---- one class per kind -----------------------------------------------------------------


class InvalidHost(BadRequest):
    """`invalid_host`: not a host alias rtrain accepts."""


class InvalidRunId(BadRequest):
    """`invalid_run_id`: not a run id rtrain accepts."""


class InvalidWorkdir(BadRequest):
    """`invalid_workdir`: not a work directory rtrain accepts."""


class InvalidPath(BadRequest):
    """`invalid_path`: not a path rtrain accepts."""


class InvalidCommand(BadRequest):
    """`invalid_command`: a command rtrain refuses to run."""


class InvalidSecret(BadRequest):
    """`invalid_secret`: a secret's name or value rtrain refuses."""


class InvalidRequirement(BadRequest):
    """`invalid_requirement`: not a requirement pip's rules read."""


class InvalidModel(BadRequest):
    """`invalid_model`: not a model name rtrain accepts."""


class LocalFileMissing(BadRequest):
    """`local_file_missing`: a file named on this machine is not there."""


class PathOutsideRun(BadRequest):
    """`path_outside_run`: a path that leaves the run's directory."""


class NoTerminateCommand(BadRequest):
    """`no_terminate_command`: neither config.toml nor an armed guard names one."""


class PortInUse(BadRequest):
    """`port_in_use`: the local port asked for is taken on this machine."""


class TimedOut(HostUnreachable):
    """`timeout`: the host took longer than its time."""


class AuthFailed(HostUnreachable):
    """`auth_failed`: the host refused the login."""


class HostKeyChanged(HostUnreachable):
    """`host_key_changed`: the host's key is not the one known for it."""


class HostBusy(HostRefused):
    """`host_busy`: a run or a transfer is under way (`data.busy` says which)."""


class PortNotListening(HostRefused):
    """`port_not_listening`: nothing listens on the host's port."""


class DiskFull(HostRefused):
    """`disk_full`: a disk is full."""


class RunActive(RunRefused):
    """`run_active`: the run is running, queued or being started."""


class RunExists(RunRefused):
    """`run_exists`: the run id is taken on the host; it is never overwritten."""


class StopRefused(RunRefused):
    """`stop_refused`: the stop was refused."""


class NotARun(RunRefused):
    """`not_a_run`: the directory is not a run of rtrain's; nothing in it was touched."""


class RunNotFound(NotFound):
    """`run_not_found`: no such run."""


class RemoteFileMissing(NotFound):
    """`remote_file_missing`: no such file in the run."""


class RemoteFailed(OperationFailed):
    """`remote_failed`: a far-side step failed."""


class TransferFailed(OperationFailed):
    """`transfer_failed`: a transfer failed on the way."""


class LocalIo(OperationFailed):
    """`local_io`: this machine's own disk refused."""


class NotImplementedByDaemon(DaemonMismatch):
    """`not_implemented`: the daemon does not do this."""


class ProtocolVersionMismatch(DaemonMismatch):
    """`protocol_version_mismatch`: the daemon speaks another protocol version."""


# Every kind's class; a test checks that each Kind has exactly one.
ERROR_CLASSES: dict[Kind, type[RemoteError]] = {
    Kind.INVALID_HOST: InvalidHost,
    Kind.INVALID_RUN_ID: InvalidRunId,
    Kind.INVALID_WORKDIR: InvalidWorkdir,
    Kind.INVALID_PATH: InvalidPath,
    Kind.INVALID_COMMAND: InvalidCommand,
    Kind.INVALID_SECRET: InvalidSecret,
    Kind.INVALID_REQUIREMENT: InvalidRequirement,
    Kind.INVALID_MODEL: InvalidModel,
    Kind.LOCAL_FILE_MISSING: LocalFileMissing,
    Kind.PATH_OUTSIDE_RUN: PathOutsideRun,
    Kind.NO_TERMINATE_COMMAND: NoTerminateCommand,
    Kind.PORT_IN_USE: PortInUse,
    Kind.HOST_UNREACHABLE: HostUnreachable,
    Kind.TIMEOUT: TimedOut,
    Kind.AUTH_FAILED: AuthFailed,
    Kind.HOST_KEY_CHANGED: HostKeyChanged,
    Kind.LOGIN_REQUIRED: LoginRequired,
    Kind.HOST_NOT_READY: HostNotReady,
    Kind.HOST_BUSY: HostBusy,
    Kind.PORT_NOT_LISTENING: PortNotListening,
    Kind.DISK_FULL: DiskFull,
    Kind.RUN_ACTIVE: RunActive,
    Kind.RUN_EXISTS: RunExists,
    Kind.STOP_REFUSED: StopRefused,
    Kind.NOT_A_RUN: NotARun,
    Kind.RUN_NOT_FOUND: RunNotFound,
    Kind.REMOTE_FILE_MISSING: RemoteFileMissing,
    Kind.REMOTE_FAILED: RemoteFailed,
    Kind.TRANSFER_FAILED: TransferFailed,
    Kind.LOCAL_IO: LocalIo,
    Kind.NOT_IMPLEMENTED: NotImplementedByDaemon,
    Kind.PROTOCOL_VERSION_MISMATCH: ProtocolVersionMismatch,
}


def remote_error(
    message: str, kind: str | None, code: int | None, data: dict[str, Any] | None
) -> RemoteError:
    """The error a daemon's error answer becomes: its kind's class, a plain RemoteError
    for no kind or one this version does not know."""
    known = _known(kind)
    cls = ERROR_CLASSES[known] if known is not None else RemoteError
    return cls(message, kind=kind, code=code, data=data)


class Interrupted(RtrainError):
    """Ctrl-C during a cancellable request: `result` is its answer if it finished anyway,
    None if the daemon cancelled it."""

    def __init__(self, result: Any) -> None:
        super().__init__("interrupted")
        self.result = result
