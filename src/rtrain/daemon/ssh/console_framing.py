"""The console's wire format on the daemon's side, without any I/O: requests out, markers in.

See console_agent.py for the far side and the meaning of each marker.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from .console_agent import HEADER_SIZE

MARK = b"RT:"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Request:
    """One far-side command: `sh -c SCRIPT rtrain ARGS...` with STDIN."""

    script: bytes
    args: bytes
    stdin: bytes
    # The script's block, and its hash: what the agent checks, and its cache key.
    script_block: bytes = field(init=False, repr=False)
    script_sha: str = field(init=False)

    def __post_init__(self) -> None:
        block = _block(self.script)
        object.__setattr__(self, "script_block", block)
        object.__setattr__(self, "script_sha", sha256_hex(block))

    @classmethod
    def of(cls, script: str, args: Sequence[str], stdin: bytes | None) -> Request:
        # Arguments travel as shell words for the agent's `eval set --`; os.fsencode keeps
        # any byte an argv may hold.
        words = os.fsencode(shlex.join(args)) if args else b""
        return cls(script.encode(), words, stdin or b"")

    def encode(self, seq: int, with_script: bool) -> bytes:
        """The header line and the three blocks. Each block's hash is that of its base64
        text as sent, so the agent checks it before decoding anything."""
        script = self.script_block if with_script else b""
        args = _block(self.args)
        stdin = _block(self.stdin)
        header = (
            f"Q {seq} {self.script_sha} {len(script)} {sha256_hex(args)} {len(args)} "
            f"{sha256_hex(stdin)} {len(stdin)}"
        )
        return _padded(header) + script + args + stdin


def _block(data: bytes) -> bytes:
    """Base64 in 76-character lines, as MIME wants, without the last newline (the agent's
    `$(...)` would drop it, and the hash must be of what it holds)."""
    return base64.encodebytes(data).rstrip(b"\n")


def again(seq: int) -> bytes:
    return _padded(f"A {seq}")


def leave() -> bytes:
    return _padded("E")


def _padded(header: str) -> bytes:
    """A header line of exactly HEADER_SIZE bytes, which the agent reads with `head -c`."""
    assert len(header) < HEADER_SIZE
    return header.ljust(HEADER_SIZE - 1).encode() + b"\n"


@dataclass(frozen=True)
class Marker:
    seq: int
    kind: str
    fields: tuple[str, ...]
    # Everything the console printed between the previous marker and this one.
    before: bytes


class MarkerScanner:
    """Splits a console's output into markers of one token, and what came between them."""

    def __init__(self, token: str) -> None:
        self._prefix = MARK + token.encode() + b":"
        self._buffer = bytearray()
        self._scanned = 0

    def feed(self, data: bytes) -> list[Marker]:
        self._buffer += data
        found: list[Marker] = []
        while True:
            start = self._buffer.find(self._prefix, self._scanned)
            if start < 0:
                self._scanned = max(0, len(self._buffer) - len(self._prefix))
                return found
            end = self._buffer.find(b"\n", start)
            if end < 0:
                self._scanned = start
                return found
            line = bytes(self._buffer[start + len(self._prefix) : end]).rstrip(b"\r")
            before = bytes(self._buffer[:start])
            del self._buffer[: end + 1]
            self._scanned = 0
            marker = _parse(line, before)
            if marker is not None:
                found.append(marker)

    @property
    def pending(self) -> int:
        """Bytes received since the last marker."""
        return len(self._buffer)


def _parse(line: bytes, before: bytes) -> Marker | None:
    parts = line.decode("ascii", errors="replace").split(":")
    if len(parts) < 2 or not parts[0].isdigit() or len(parts[1]) != 1:
        return None
    return Marker(int(parts[0]), parts[1], tuple(parts[2:]), before)
