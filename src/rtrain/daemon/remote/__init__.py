"""What runs on the far host: POSIX sh scripts (one per operation) and the demo trainer."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable

from rtrain.daemon.remote.script_libraries import script_parts

# A script's word `'@NAME.py@'` stands for the Python program NAME.py beside this file, which
# the linters and mypy read as a file; it is sent as that one single-quoted word.
_PROGRAM_WORD = re.compile(r"'@([a-z_]+\.py)@'")


@cache
def script(name: str) -> str:
    """The shell text for operation `name`: the far-side libraries it needs, then NAME.sh
    (script_libraries.py says which). A launcher's own script is `PACKAGE:NAME`."""
    here = resources.files(__package__)
    *libraries, own = script_parts(name)
    text = _PROGRAM_WORD.sub(lambda word: _program(here / word[1]), own.read_text())
    return "\n".join([*(part.read_text() for part in libraries), text])


def _program(path: Traversable) -> str:
    text = path.read_text()
    if "'" in text:
        # Nothing can end a single-quoted sh word early but a quote.
        raise ValueError(f"{path.name} holds a single quote: it cannot be one sh word")
    return f"'{text}'"
