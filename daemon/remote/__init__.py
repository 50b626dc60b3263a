"""What runs on the far host: POSIX sh scripts (one per operation) and the demo trainer."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def script(name: str) -> str:
    """The shell text for operation `name`: common.sh followed by NAME.sh."""
    folder = resources.files(__package__) / "scripts"
    common = (folder / "common.sh").read_text()
    return common + "\n" + (folder / f"{name}.sh").read_text()
