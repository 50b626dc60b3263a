"""What runs on the far host: POSIX sh scripts (one per operation) and the demo trainer."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable

# A script's word `'@NAME.py@'` stands for the Python program NAME.py beside this file, which
# the linters and mypy read as a file; it is sent as that one single-quoted word.
_PROGRAM_WORD = re.compile(r"'@([a-z_]+\.py)@'")


@cache
def script(name: str) -> str:
    """The shell text for operation `name`: common.sh followed by NAME.sh. A launcher's own
    script is `PACKAGE:NAME`, PACKAGE under rtrain.daemon (`launchers.slurm:slurm_poll`): it
    lives in that package's `scripts/`, beside the launcher that runs it."""
    here = resources.files(__package__)
    package, _, stem = name.rpartition(":")
    home = resources.files(f"rtrain.daemon.{package}") if package else here
    common = (here / "scripts" / "common.sh").read_text()
    own = (home / "scripts" / f"{stem}.sh").read_text()
    return common + "\n" + _PROGRAM_WORD.sub(lambda word: _program(here / word[1]), own)


def _program(path: Traversable) -> str:
    text = path.read_text()
    if "'" in text:
        # Nothing can end a single-quoted sh word early but a quote.
        raise ValueError(f"{path.name} holds a single quote: it cannot be one sh word")
    return f"'{text}'"
