"""What the trainer says: progress on stdout, one-line warnings and errors on stderr."""

from __future__ import annotations

import sys

PROGRAM = "demo_trainer"
EXIT_USAGE = 2


class UserError(Exception):
    """A problem the user can fix (config, dataset, run dir): one sentence, exit code 2."""


def warn(message: str) -> None:
    print(f"{PROGRAM}: warning: {message}", file=sys.stderr, flush=True)


def error(message: str) -> None:
    print(f"{PROGRAM}: error: {message}", file=sys.stderr, flush=True)


def say(message: str) -> None:
    print(message, flush=True)


def one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
