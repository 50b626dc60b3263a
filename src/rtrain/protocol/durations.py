"""Durations as people write them (`90s`, `30m`, `6h`, `1h30m`, `2d`) and read them back.

Standard library only: the CLI checks a duration before it talks to the daemon, and every
client pays for what it imports at start-up.
"""

from __future__ import annotations

import re

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_PART = re.compile(r"(\d+)([smhd])")
_WHOLE = re.compile(r"(?:\d+[smhd])+")
# Far past any idle period or run, and still an exact integer everywhere (sh's arithmetic
# included: the guard's script takes at most 9 digits).
MAX_SECONDS = 365 * 86400


class DurationError(ValueError):
    """A text that is no duration; its message is the one sentence to show."""


def parse_duration(text: str, *, what: str = "a duration") -> int:
    """Whole seconds from `90s`, `30m`, `6h`, `2d` or a sum of them (`1h30m`); at least 1 s,
    at most a year. A bare number is refused: `30` could mean seconds or minutes."""
    words = text.strip().lower().replace(" ", "")
    if not _WHOLE.fullmatch(words):
        raise DurationError(
            f"{text!r} is not {what}: write a number and a unit, like 90s, 30m, 6h or 1h30m."
        )
    seconds = sum(int(count) * _UNITS[unit] for count, unit in _PART.findall(words))
    if seconds < 1:
        raise DurationError(f"{text!r} is not {what}: it must be at least 1s.")
    if seconds > MAX_SECONDS:
        raise DurationError(f"{text!r} is not {what}: it must be at most 365d.")
    return seconds


def human_duration(seconds: float) -> str:
    """`45s`, `12m`, `1h 5m`, `2d 3h`: the two largest units, rounded down; `0s` below 1 s."""
    whole = max(0, int(seconds))
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if whole >= size or (unit == "s" and not parts):
            parts.append(f"{whole // size}{unit}")
            whole %= size
        if len(parts) == 2:
            break
    # `1h 0m` reads as noise: drop a zero second unit.
    if len(parts) == 2 and parts[1].startswith("0"):
        parts.pop()
    return " ".join(parts)
