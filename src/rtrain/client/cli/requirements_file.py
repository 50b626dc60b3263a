"""`--require-file requirements.txt`: the requirement lines pip would read, as strings.

Comments, blank lines and line continuations are handled as pip does; `-r FILE` is followed
(relative to the file that names it). Other pip options (`-i`, `--extra-index-url`, `-e`,
`-c`) say where or how to install, not what must be there, and are skipped. Each remaining
line must be a requirement `packaging` accepts; the daemon checks it again.
"""

from __future__ import annotations

from pathlib import Path

from rtrain.protocol import validation
from rtrain.protocol.errors import RpcError
from rtrain.protocol.requirement_lines import logical_lines


class RequirementsFileError(Exception):
    """One sentence naming the file and line."""


def read_requirements(path: Path, _seen: frozenset[Path] = frozenset()) -> list[str]:
    try:
        resolved = path.resolve()
        text = path.read_text()
    except OSError as error:
        raise RequirementsFileError(
            f"--require-file {path}: cannot read it ({error.strerror or error})."
        ) from None
    if resolved in _seen:
        raise RequirementsFileError(f"--require-file {path}: it includes itself through -r.")
    found: list[str] = []
    for number, line in logical_lines(text):
        if line.startswith(("-r ", "--requirement ", "-r\t", "--requirement=")):
            name = line.split("=", 1)[1] if line.startswith("--requirement=") else line.split()[1]
            found += read_requirements(path.parent / name.strip(), _seen | {resolved})
            continue
        if line.startswith("-"):
            continue
        try:
            validation.requirement(line)
        except RpcError as error:
            raise RequirementsFileError(f"{path} line {number}: {error.message}") from None
        found.append(line)
    return found
