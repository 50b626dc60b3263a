"""Which files make up the text of one far-side operation: `scripts/lib/core.sh`, the libraries
the operation's script names on its `# rtrain-needs:` line (and those they name in turn),
then the script itself. Only these travel before a far call, not the whole library."""

from __future__ import annotations

import re
from importlib import resources
from importlib.resources.abc import Traversable

# `# rtrain-needs: run_dir hashing`: files under scripts/lib/, without `.sh`.
_NEEDS = re.compile(r"^# rtrain-needs:(.*)$", re.MULTILINE)
CORE = "core"


def declared_needs(text: str) -> list[str]:
    """The library names a script or library declares (none without the line)."""
    found = _NEEDS.search(text)
    return found[1].split() if found else []


def library(name: str) -> Traversable:
    return resources.files(__package__) / "scripts" / "lib" / f"{name}.sh"


def own_script(name: str) -> Traversable:
    """Operation `name`'s own script. A launcher's own is `PACKAGE:NAME`, PACKAGE under
    rtrain.daemon (`launchers.slurm:slurm_poll`), in that package's `scripts/`."""
    package, _, stem = name.rpartition(":")
    home = resources.files(f"rtrain.daemon.{package}" if package else __package__)
    return home / "scripts" / f"{stem}.sh"


def script_parts(name: str) -> list[Traversable]:
    """The files sent for operation `name`, in order: core first, every library after the
    libraries it needs (their variables start set before anything runs), the script last."""
    ordered: list[str] = []

    def visit(lib: str, path: tuple[str, ...]) -> None:
        if lib in ordered:
            return
        if lib in path:
            raise ValueError(f"far-side libraries need each other in a circle: {path}")
        for needed in declared_needs(library(lib).read_text()):
            visit(needed, (*path, lib))
        ordered.append(lib)

    visit(CORE, ())
    own = own_script(name)
    for needed in declared_needs(own.read_text()):
        visit(needed, ())
    return [library(lib) for lib in ordered] + [own]
