"""The CLI's exit statuses, and the one table saying which error gets which.

docs/cli.md shows this table (a test reads both and fails when they differ). The daemon's
errors are keyed by their protocol kind; the client's own failures have kinds of their own.
No msgspec here: the start-up fast path exits through this module too.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum

from rtrain.protocol.errors import (
    BAD_INPUT_KINDS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Kind,
)


class Exit(IntEnum):
    OK = 0
    FAILED = 1  # it was tried and did not work, or the answer is "no"
    BAD_INPUT = 2  # the request itself is wrong: nothing was done
    # The host asks for a password or a second factor: `rtrain login HOST`, then try again.
    LOGIN_REQUIRED = 10
    INTERRUPTED = 130  # Ctrl-C


class ClientKind(StrEnum):
    """Errors the CLI meets before or around the daemon's answer."""

    USAGE = "usage"  # an unusable argument, refused before the daemon is asked
    INVALID_PARAMS = "invalid_params"  # the daemon refused the request's shape (-32602)
    INTERNAL_ERROR = "internal_error"  # the daemon failed in a way it did not foresee
    METHOD_NOT_FOUND = "method_not_found"  # a daemon too old for this command
    DAEMON_UNAVAILABLE = "daemon_unavailable"  # none answers, and none could be started
    DAEMON_CONNECTION = "daemon_connection"  # the connection to it broke
    INTERRUPTED = "interrupted"  # Ctrl-C while a request was under way


EXIT_BY_KIND: dict[str, Exit] = {
    **{kind.value: Exit.BAD_INPUT if kind in BAD_INPUT_KINDS else Exit.FAILED for kind in Kind},
    Kind.LOGIN_REQUIRED: Exit.LOGIN_REQUIRED,
    ClientKind.USAGE: Exit.BAD_INPUT,
    ClientKind.INVALID_PARAMS: Exit.BAD_INPUT,
    ClientKind.INTERNAL_ERROR: Exit.FAILED,
    ClientKind.METHOD_NOT_FOUND: Exit.FAILED,
    ClientKind.DAEMON_UNAVAILABLE: Exit.FAILED,
    ClientKind.DAEMON_CONNECTION: Exit.FAILED,
    ClientKind.INTERRUPTED: Exit.INTERRUPTED,
}

# An error answer without a kind is named after its JSON-RPC code.
KIND_BY_CODE: dict[int, str] = {
    INVALID_PARAMS: ClientKind.INVALID_PARAMS,
    INTERNAL_ERROR: ClientKind.INTERNAL_ERROR,
    METHOD_NOT_FOUND: ClientKind.METHOD_NOT_FOUND,
}


def exit_for(kind: str) -> Exit:
    """The exit status of an error of `kind`; one this version does not know failed."""
    return EXIT_BY_KIND.get(kind, Exit.FAILED)
