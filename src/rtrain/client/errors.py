"""Errors a caller of the client can catch, each carrying the one sentence a user needs."""

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
    """The daemon refused or failed an operation; `kind` is the stable error kind."""

    def __init__(
        self,
        message: str,
        kind: str | None = None,
        code: int | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.code = code
        self.data = data or {}


class HostUnreachable(RemoteError):
    """The host did not answer: unreachable, timed out, or it refused the login (kinds
    `host_unreachable`, `timeout`, `auth_failed`, `host_key_changed`). Whatever was asked
    may be asked again once it answers."""


class HostNotReady(RemoteError):
    """The host answered but cannot take the run as asked (kind `host_not_ready`): too few
    GPUs free (`data.holders` names the runs that hold them), a tool it lacks..."""


class RunRefused(RemoteError):
    """The run cannot be acted on as asked, and nothing was done (kinds `run_active`,
    `run_exists`, `stop_refused`, `not_a_run`): stop it first, pick another run id, check
    the run id and workdir."""


# The daemon's error kinds each typed error stands for; any other kind is a RemoteError.
_TYPED_KINDS: dict[str, type[RemoteError]] = {
    **dict.fromkeys(
        (Kind.HOST_UNREACHABLE, Kind.TIMEOUT, Kind.AUTH_FAILED, Kind.HOST_KEY_CHANGED),
        HostUnreachable,
    ),
    Kind.HOST_NOT_READY: HostNotReady,
    **dict.fromkeys(
        (Kind.RUN_ACTIVE, Kind.RUN_EXISTS, Kind.STOP_REFUSED, Kind.NOT_A_RUN), RunRefused
    ),
}


def remote_error(
    message: str, kind: str | None, code: int | None, data: dict[str, Any] | None
) -> RemoteError:
    """The error a daemon's error answer becomes: typed where its kind has a type."""
    cls = _TYPED_KINDS.get(kind or "", RemoteError)
    return cls(message, kind=kind, code=code, data=data)


class Interrupted(RtrainError):
    """Ctrl-C during a cancellable request: `result` is its answer if it finished anyway,
    None if the daemon cancelled it."""

    def __init__(self, result: Any) -> None:
        super().__init__("interrupted")
        self.result = result
