"""The lifecycle of one connection, as data: which messages each state admits, and where
each message moves it.

Every rule about initialize / shutdown / exit ordering lives in this module, and both sides
read the same rules: the server when it *receives* a message (a refused request is answered
with an error), the client when it *sends* one (a refused request is a LocalProtocolError,
raised before anything reaches the wire). Standard library only: the client starts fast.
"""

from __future__ import annotations

from enum import Enum

from .errors import INVALID_REQUEST, SERVER_NOT_INITIALIZED


class State(Enum):
    NEW = "new"  # nothing yet; only `initialize` is served
    INITIALIZING = "initializing"  # `initialize` sent/received, not yet answered
    READY = "ready"
    SHUTDOWN = "shutdown"  # `shutdown` sent/received: requests refused, waiting for `exit`
    EXITED = "exited"


class Step(Enum):
    """What happened to a request, as either side sees it."""

    REQUEST = "request"  # the client sent it; the server received it
    RESULT = "result"  # it was answered with a result
    ERROR = "error"  # it was answered with an error
    NOTIFICATION = "notification"  # a notification: sent by one side, received by the other


# (state, step, method) -> the state after it. Anything not listed leaves the state alone.
TRANSITIONS: dict[tuple[State, Step, str], State] = {
    (State.NEW, Step.REQUEST, "initialize"): State.INITIALIZING,
    (State.INITIALIZING, Step.RESULT, "initialize"): State.READY,
    # A refused `initialize` (another protocol major, say) puts the connection back.
    (State.INITIALIZING, Step.ERROR, "initialize"): State.NEW,
    (State.READY, Step.REQUEST, "shutdown"): State.SHUTDOWN,
    **{(state, Step.NOTIFICATION, "exit"): State.EXITED for state in State},
}

# Requests refused in a state, by (state, method); "*" is every method not listed.
_REFUSED: dict[tuple[State, str], tuple[int, str]] = {
    (State.NEW, "*"): (SERVER_NOT_INITIALIZED, "Not initialized: send `initialize` first."),
    (State.INITIALIZING, "initialize"): (
        INVALID_REQUEST,
        "Already initialized: `initialize` is sent once per connection.",
    ),
    (State.INITIALIZING, "*"): (
        INVALID_REQUEST,
        "Wait for the answer to `initialize` before sending requests.",
    ),
    (State.READY, "initialize"): (
        INVALID_REQUEST,
        "Already initialized: `initialize` is sent once per connection.",
    ),
    (State.SHUTDOWN, "*"): (INVALID_REQUEST, "This connection is shutting down; open a new one."),
    (State.EXITED, "*"): (INVALID_REQUEST, "This connection is shutting down; open a new one."),
}
_SERVED_WHEN_NEW = frozenset({"initialize"})

# Notifications heeded in each state (None: all of them). Others are dropped by a server,
# as LSP asks, and refused locally to a client that tries to send them.
_NOTIFICATIONS: dict[State, frozenset[str] | None] = {
    State.NEW: frozenset({"exit"}),
    State.INITIALIZING: frozenset({"exit", "$/cancelRequest"}),
    State.READY: None,
    State.SHUTDOWN: None,
    State.EXITED: frozenset(),
}


def after(state: State, step: Step, method: str) -> State:
    """The state once `method` took `step` in `state`."""
    return TRANSITIONS.get((state, step, method), state)


def refusal(state: State, method: str) -> tuple[int, str] | None:
    """Why a request for `method` cannot be served in `state`: (code, message), or None."""
    if state is State.NEW and method in _SERVED_WHEN_NEW:
        return None
    return _REFUSED.get((state, method)) or _REFUSED.get((state, "*"))


def admits_notification(state: State, method: str) -> bool:
    """Before `initialize` is answered only `exit` (and a cancel) is heeded, as in LSP."""
    heeded = _NOTIFICATIONS[state]
    return heeded is None or method in heeded
