"""The lifecycle of one connection, as data: which messages each state admits.

Every rule about initialize / shutdown / exit ordering lives in this module.
"""

from __future__ import annotations

from enum import Enum


class State(Enum):
    NEW = "new"  # nothing yet; only `initialize` is served
    INITIALIZING = "initializing"  # `initialize` received, not yet answered
    READY = "ready"
    SHUTDOWN = "shutdown"  # `shutdown` received: requests refused, waiting for `exit`
    EXITED = "exited"


# On receiving a request for this method in this state, move to the new state.
REQUEST_TRANSITIONS: dict[tuple[State, str], State] = {
    (State.NEW, "initialize"): State.INITIALIZING,
    (State.READY, "shutdown"): State.SHUTDOWN,
}
# On answering (successfully) a request for this method, move to the new state.
RESULT_TRANSITIONS: dict[tuple[State, str], State] = {
    (State.INITIALIZING, "initialize"): State.READY,
}
# A failed `initialize` puts the connection back where it was.
ERROR_TRANSITIONS: dict[tuple[State, str], State] = {
    (State.INITIALIZING, "initialize"): State.NEW,
}


def refusal(state: State, method: str) -> tuple[int, str] | None:
    """Why a request for `method` cannot be served in `state`: (code, message), or None."""
    from .errors import INVALID_REQUEST, SERVER_NOT_INITIALIZED

    if state is State.NEW and method != "initialize":
        return SERVER_NOT_INITIALIZED, "Not initialized: send `initialize` first."
    if state in (State.INITIALIZING, State.READY) and method == "initialize":
        return INVALID_REQUEST, "Already initialized: `initialize` is sent once per connection."
    if state is State.INITIALIZING:
        return INVALID_REQUEST, "Wait for the answer to `initialize` before sending requests."
    if state in (State.SHUTDOWN, State.EXITED):
        return INVALID_REQUEST, "This connection is shutting down; open a new one."
    return None


def admits_notification(state: State, method: str) -> bool:
    """Before `initialize` only `exit` is heeded; other notifications are dropped (as in LSP)."""
    if state is State.NEW:
        return method == "exit"
    return state is not State.EXITED
