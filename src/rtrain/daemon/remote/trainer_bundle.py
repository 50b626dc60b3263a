"""The demo trainer package as the one file shipped to the far host: a zip application.

Python runs a zip archive given as its script (whatever the file is called) by importing
`__main__` from it, so the far side keeps running `PYTHON demo_trainer.py ...` with nothing
installed. The archive is built from the installed package with fixed timestamps and in a
fixed order, so its sha256 changes only when the trainer's code does (the far side's input
cache is keyed by it). Entries are stored, not compressed: a far Python without zlib still
reads them.
"""

from __future__ import annotations

import io
import zipfile
from functools import cache
from importlib import resources

PACKAGE = "demo_trainer"
# The zip's own entry point; the package inside it imports itself relatively.
ENTRY = b"import sys\n\nfrom demo_trainer.main import main\n\nsys.exit(main())\n"
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold


def trainer_modules() -> list[tuple[str, bytes]]:
    """(file name, source) of every module of the trainer package, sorted by name."""
    folder = resources.files(f"{__package__}.{PACKAGE}")
    found = [
        (entry.name, entry.read_bytes())
        for entry in folder.iterdir()
        if entry.name.endswith(".py") and entry.is_file()
    ]
    return sorted(found)


@cache
def demo_trainer_bundle() -> bytes:
    """The zip application's bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        entries = [("__main__.py", ENTRY)]
        entries += [(f"{PACKAGE}/{name}", source) for name, source in trainer_modules()]
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()
