"""The `rtrain` console script. `--version` answers before typer is even imported, and the
plain forms of `status` and `tail` without it (fast_path.py)."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):
        from rtrain.protocol.version import RTRAIN_VERSION

        print(f"rtrain {RTRAIN_VERSION}")
        return
    from .fast_path import try_fast_path

    if try_fast_path(sys.argv[1:]):
        return
    from .cli.app import run

    run()
