"""The partial folders of this machine's fetches, by host, so that `rtrain gc HOST` can sweep
what cut fetches left there (a fetch of the same target resumes or sweeps it on its own, but
a target never fetched again would keep it for ever).

The book is one file in the daemon's state directory, `partial-folders`: `HOST<TAB>FOLDER` per
line, a line added when a fetch first makes a partial folder (`.rtrain-partial/`) and dropped
once gc finds the folder gone. Only the daemon writes it (one daemon per user).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from rtrain.protocol import locations

NAME = "partial-folders"
_known: set[tuple[str, str]] | None = None


def _book() -> Path:
    return locations.state_dir() / NAME


def _read() -> set[tuple[str, str]]:
    global _known
    if _known is None:
        _known = set()
        with contextlib.suppress(OSError):
            for line in _book().read_text().splitlines():
                host, sep, folder = line.partition("\t")
                if sep and folder:
                    _known.add((host, folder))
    return _known


def _write(entries: set[tuple[str, str]]) -> None:
    book = _book()
    temporary = book.with_name(f"{NAME}.new")
    temporary.write_text("".join(f"{host}\t{folder}\n" for host, folder in sorted(entries)))
    os.replace(temporary, book)


def remember(host: str, folder: Path) -> None:
    """Note that a fetch from `host` keeps partial data in `folder`. Never fails a fetch: a
    book that cannot be written only leaves gc blind to this folder."""
    entries = _read()
    entry = (host, str(folder))
    if entry in entries or "\n" in entry[1] or "\t" in host:
        return
    entries.add(entry)
    with contextlib.suppress(OSError):
        _write(entries)


def sweep(host: str, in_use: Callable[[Path], bool]) -> tuple[int, int]:
    """Remove every file in the partial folders of `host`'s fetches that `in_use` does not
    claim, and each folder once empty: (cut fetches swept, bytes freed). A partial copy is
    its data and its record: counted once."""
    entries = _read()
    swept = freed = 0
    for entry in sorted(e for e in entries if e[0] == host):
        folder = Path(entry[1])
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            entries.discard(entry)
            continue
        except OSError:
            continue
        for name in names:
            path = folder / name
            if in_use(path):
                continue
            with contextlib.suppress(OSError):
                size = path.lstat().st_size
                path.unlink()
                freed += size
                if not name.endswith((".json", ".json.new")):
                    swept += 1
        with contextlib.suppress(OSError):
            folder.rmdir()
            entries.discard(entry)
    with contextlib.suppress(OSError):
        _write(entries)
    return swept, freed
