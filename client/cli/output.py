"""How the CLI speaks: data to stdout, messages and errors to stderr, `--json` for scripts.

No msgspec at import: the start-up fast path speaks through this module too.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from rtrain.client.errors import RemoteError, RtrainError
from rtrain.protocol.errors import BAD_INPUT_KINDS, INVALID_PARAMS

from .json_text import json_text

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int = 1) -> NoReturn:
    print(f"rtrain: {message}", file=sys.stderr)
    raise SystemExit(code)


def friendly_errors(func: F) -> F:
    """Turn the client's own errors into one sentence on stderr: exit 2 for bad input,
    1 for anything else."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RemoteError as error:
            bad_input = error.kind in BAD_INPUT_KINDS or error.code == INVALID_PARAMS
            fail(error.message, 2 if bad_input else 1)
        except RtrainError as error:
            fail(error.message)

    return wrapper  # type: ignore[return-value]


def print_json(value: Any) -> None:
    # A Struct (DaemonClient's answers) exists only once msgspec is loaded, and then msgspec
    # writes. Otherwise the value is plain data from the quick client, and json_text writes
    # the same bytes msgspec would.
    msgspec = sys.modules.get("msgspec")
    text = msgspec.json.encode(value).decode() if msgspec is not None else json_text(value)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def to_builtins(value: Any) -> Any:
    """An answer as plain JSON data: the quick client's answers (WireObjects) already are."""
    if isinstance(value, dict):
        return value
    import msgspec

    return msgspec.to_builtins(value)


def note(message: str) -> None:
    print(message, file=sys.stderr)
