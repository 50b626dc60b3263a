"""What every far-side answer is made of: the script's whole output (Completed), how it is
run (Runner: what a transport offers the contract), lib/core.sh's exit codes, and the machine
lines split once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol

import msgspec

from rtrain.daemon.remote.error_words import ErrorWord, FarError, far_error


@dataclass(frozen=True)
class Completed:
    """A far-side script's whole answer, whatever its exit status."""

    returncode: int
    stdout: bytes
    stderr: bytes
    # What the far login printed before the script began (a chatty rc file), kept apart so
    # it never counts as the script's output; preflight reports it.
    noise: bytes = b""

    @property
    def error_text(self) -> str:
        text = self.stderr.decode(errors="replace").strip()
        if not text:
            return f"exit status {self.returncode}"
        # The scripts say `rtrain: ...` (for a person reading a far log); the client puts its
        # own `rtrain:` in front of the sentence this becomes part of.
        return text.splitlines()[-1].removeprefix("rtrain: ")


class Runner(Protocol):
    """What the contract asks of a transport: run far-side script `name` with `args`."""

    async def run(
        self, name: str, args: Sequence[str], *, stdin: bytes | None = None, timeout: float = 60
    ) -> Completed: ...


class Exit(IntEnum):
    """lib/core.sh's exit codes (`E_*`); tests/remote/test_contract.py keeps the two equal."""

    OK = 0
    USAGE = 2
    MISMATCH = 3
    WRITE = 4
    REFUSED = 5
    SURVIVED = 6
    OUTSIDE = 7
    NOT_FOUND = 8
    BAD_NAME = 9
    BAD_SECRET = 10
    NO_DETACH = 11
    LAUNCH_TIMEOUT = 12
    IO = 14
    ALREADY_LAUNCHED = 15
    RUN_EXISTS = 17
    GPUS_BUSY = 18
    SCHEDULER = 20
    NOT_A_RUN = 21


class Lines:
    """A script's machine lines, split once: `key<TAB>value...` per line."""

    def __init__(self, data: bytes) -> None:
        self._lines = [line.split("\t") for line in data.decode(errors="replace").splitlines()]

    def last(self, key: str) -> list[str] | None:
        """The values of the last `key` line; None when there is none."""
        for line in reversed(self._lines):
            if line[0] == key:
                return line[1:]
        return None

    def value(self, key: str) -> str | None:
        """The first value of the last `key` line (a key with no value gives "")."""
        values = self.last(key)
        if values is None:
            return None
        return values[0] if values else ""

    def rows(self, key: str) -> list[list[str]]:
        """The values of every `key` line, in order."""
        return [line[1:] for line in self._lines if line[0] == key]

    def __contains__(self, key: object) -> bool:
        return any(line[0] == key for line in self._lines)

    def error(self) -> FarError | None:
        """The last `error` line, its word decoded (daemon/remote/error_words.py)."""
        return far_error(self.last("error"))

    def __bool__(self) -> bool:
        return bool(self._lines)


class Answer(msgspec.Struct, frozen=True, kw_only=True):
    """What every script's answer carries besides its own fields."""

    exit: int
    # The last line a script said for humans (stderr), or its exit status: for messages.
    error_text: str


def said(lines: Lines, word: ErrorWord) -> bool:
    """The script's last `error` line is exactly `word`, with nothing after it."""
    error = lines.error()
    return error is not None and error.word == word and not error.args


def as_int(value: str | None) -> int | None:
    return int(value) if value is not None and value.lstrip("-").isdigit() else None


def as_float(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def pids(value: str | None) -> list[int]:
    return [int(word) for word in (value or "").split() if word.isdigit()]
