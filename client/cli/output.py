"""How the CLI speaks: data to stdout, messages and errors to stderr, `--json` for scripts."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import msgspec

from rtrain.client.errors import RtrainError

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int = 1) -> NoReturn:
    print(f"rtrain: {message}", file=sys.stderr)
    raise SystemExit(code)


def friendly_errors(func: F) -> F:
    """Turn the client's own errors into one sentence on stderr and exit status 1."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RtrainError as error:
            fail(error.message)

    return wrapper  # type: ignore[return-value]


def print_json(value: Any) -> None:
    sys.stdout.write(msgspec.json.encode(value).decode() + "\n")
    sys.stdout.flush()


def note(message: str) -> None:
    print(message, file=sys.stderr)
