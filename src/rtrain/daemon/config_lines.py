"""Where in a TOML file a key is set, so a complaint about the user config can name its line.

tomllib keeps no positions, so this reads the text itself: table headers (`[hosts.gpubox]`)
and `key = value` lines, quoted or dotted keys included. It answers None when unsure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_ASSIGNMENT = re.compile(r"^\s*((?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_.\- ]+?)+?)\s*=")


def _split_key(dotted: str) -> list[str]:
    parts = re.findall(r"\"([^\"]*)\"|'([^']*)'|([^.\s\"']+)", dotted)
    return [next(piece for piece in part if piece) if any(part) else "" for part in parts]


def line_of(text: str, keys: Sequence[str]) -> int | None:
    """The line (counted from 1) that sets `keys` (e.g. ["hosts", "gpubox", "transport"]),
    or the header of that table; None if no line does."""
    wanted = list(keys)
    table: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            table = _split_key(header.group(1))
            if table == wanted:
                return number
            continue
        assignment = _ASSIGNMENT.match(line)
        if assignment and table + _split_key(assignment.group(1)) == wanted:
            return number
    return None
