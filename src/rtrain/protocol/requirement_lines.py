"""The logical lines of a pip requirements file, as pip reads them: sans-IO, standard library
only, so the CLI (`--require-file`) and the daemon (`--requirements`) read files alike."""

from __future__ import annotations


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each line after joining `\\` continuations and dropping
    comments (`#` at the start, or after whitespace)."""
    joined: list[tuple[int, str]] = []
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not pending:
            start = number
        if raw.endswith("\\"):
            pending += raw[:-1]
            continue
        line = pending + raw
        pending = ""
        if line.lstrip().startswith("#"):
            continue
        for marker in (" #", "\t#"):
            if marker in line:
                line = line.split(marker, 1)[0]
        if line.strip():
            joined.append((start, line.strip()))
    if pending.strip():
        joined.append((start, pending.strip()))
    return joined
