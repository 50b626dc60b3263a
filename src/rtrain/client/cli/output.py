"""How the CLI speaks: data to stdout, messages and errors to stderr, `--json` for scripts.

No msgspec at import: the start-up fast path speaks through this module too.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from rtrain.client.errors import DaemonProtocolError, DaemonUnavailable, RemoteError, RtrainError

from .exit_codes import KIND_BY_CODE, ClientKind, Exit, exit_for
from .json_text import json_text

F = TypeVar("F", bound=Callable[..., Any])


_errors_as_json = False  # --json given: errors are JSON objects too


def errors_as_json(on: bool) -> None:
    global _errors_as_json
    _errors_as_json = on


def fail(message: str, code: int | None = None, kind: str | None = None) -> NoReturn:
    """Say `message` on stderr and exit: with `code`, or the exit status of `kind` in the
    table (exit_codes.py). With --json, the error is `{"error": {"kind", "message"}}`."""
    kind = kind or (ClientKind.USAGE if code == Exit.BAD_INPUT else "failed")
    if _errors_as_json:
        error = {"error": {"kind": str(kind), "message": message}}
        print(json_text(error), file=sys.stderr)
    else:
        print(f"rtrain: {message}", file=sys.stderr)
    raise SystemExit(exit_for(kind) if code is None else code)


def friendly_errors(func: F) -> F:
    """Turn the client's own errors into one sentence on stderr (a JSON object with
    --json), with the exit status the table gives their kind."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("json"):
            errors_as_json(True)
        try:
            return func(*args, **kwargs)
        except RemoteError as error:
            kind = error.kind_name or KIND_BY_CODE.get(error.code or 0, ClientKind.INTERNAL_ERROR)
            fail(error.message, kind=kind)
        except DaemonUnavailable as error:
            fail(error.message, kind=ClientKind.DAEMON_UNAVAILABLE)
        except DaemonProtocolError as error:
            fail(error.message, kind=ClientKind.DAEMON_CONNECTION)
        except RtrainError as error:
            fail(error.message)

    return wrapper  # type: ignore[return-value]


def print_json(value: Any) -> None:
    """One line of JSON: the client's answers are plain data (WireObjects), written as the
    daemon's msgspec writes them, without loading msgspec."""
    sys.stdout.write(json_text(value) + "\n")
    sys.stdout.flush()


def note(message: str) -> None:
    print(message, file=sys.stderr)
