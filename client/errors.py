"""Errors a caller of the client can catch, each carrying the one sentence a user needs."""

from __future__ import annotations

from typing import Any


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


class Interrupted(RtrainError):
    """Ctrl-C during a cancellable request: `result` is its answer if it finished anyway,
    None if the daemon cancelled it."""

    def __init__(self, result: Any) -> None:
        super().__init__("interrupted")
        self.result = result
