"""A stand-in `ssh` that relays console sessions and damages bytes in flight.

The tests put it first on PATH as `ssh`. Anything but a console session (`-tt`) goes straight
to the real ssh. A console session runs the real ssh as a child and copies bytes both ways,
changing one base64 letter into another (or dropping bytes) as RTRAIN_TEST_DAMAGE says:

    DIRECTION:AFTER:MODE     DIRECTION up (to the host) or down (from it)
                             AFTER     bytes of that direction to let through first
                             MODE      once (one damage in all sessions together),
                                       every (one per EVERY bytes), drop (lose DROP bytes once)

Each damage is logged as one line in RTRAIN_TEST_DAMAGE_LOG.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

EVERY = 50_000
DROP = 4096
BASE64_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


class Damage:
    def __init__(self, after: int, mode: str, log: Path) -> None:
        self.next_at: int | None = after
        self.mode = mode
        self.log = log
        self.seen = 0

    def apply(self, data: bytes) -> bytes:
        buffer = bytearray(data)
        start = self.seen
        self.seen += len(data)
        out = bytearray()
        cursor = 0
        while self.next_at is not None and self.next_at < self.seen:
            at = max(self.next_at - start, cursor)
            if self.mode == "drop":
                if not self._claim():
                    self.next_at = None
                    break
                out += buffer[cursor:at]
                cursor = min(len(buffer), at + DROP)
                self._note(f"dropped {cursor - at} bytes at {start + at}")
                self.next_at = None
                break
            hit = next((i for i in range(at, len(buffer)) if buffer[i] in BASE64_LETTERS), None)
            if hit is None:
                self.next_at = self.seen  # the next letter, in the next read
                break
            if self.mode == "once" and not self._claim():
                self.next_at = None
                break
            old = buffer[hit]
            buffer[hit] = ord("A") if old != ord("A") else ord("B")
            self._note(f"changed byte {start + hit}: {chr(old)!r} -> {chr(buffer[hit])!r}")
            self.next_at = start + hit + EVERY if self.mode == "every" else None
        return bytes(out + buffer[cursor:])

    def _claim(self) -> bool:
        """Only the first session to get here damages anything (modes once and drop)."""
        try:
            fd = os.open(f"{self.log}.claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            return False
        os.close(fd)
        return True

    def _note(self, line: str) -> None:
        with open(self.log, "a") as log:
            log.write(line + "\n")


def pump(source: int, sink: int, damage: Damage | None, close: Callable[[], None]) -> None:
    try:
        while data := os.read(source, 65536):
            if damage is not None:
                data = damage.apply(data)
            while data:
                written = os.write(sink, data)
                data = data[written:]
    except OSError:
        pass
    finally:
        close()


def main() -> int:
    real = os.environ["RTRAIN_TEST_REAL_SSH"]
    spec = os.environ.get("RTRAIN_TEST_DAMAGE", "")
    args = sys.argv[1:]
    if "-tt" not in args or not spec:
        os.execv(real, [real, *args])
    direction, after, mode = spec.split(":")
    damage = Damage(int(after), mode, Path(os.environ["RTRAIN_TEST_DAMAGE_LOG"]))
    child = subprocess.Popen(
        [real, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
    )
    assert child.stdin is not None and child.stdout is not None
    signal.signal(signal.SIGTERM, lambda *_: child.terminate())
    up = threading.Thread(
        target=pump,
        args=(0, child.stdin.fileno(), damage if direction == "up" else None, child.stdin.close),
        daemon=True,
    )
    down = threading.Thread(
        target=pump,
        args=(child.stdout.fileno(), 1, damage if direction == "down" else None, sys.stdout.close),
        daemon=True,
    )
    up.start()
    down.start()
    code = child.wait()
    down.join(5)
    return code


if __name__ == "__main__":
    sys.exit(main())
