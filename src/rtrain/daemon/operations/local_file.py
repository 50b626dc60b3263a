"""One local file a start ships, and the sentences for a local path that cannot be shipped."""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path

from rtrain.protocol.errors import Kind, RpcError, app_error


@dataclass(frozen=True)
class LocalFile:
    """One file to ship: `rel` is where it lands in the run dir ('/'-separated)."""

    rel: str
    source: Path | bytes
    size: int
    executable: bool = False


def local(path: Path, rel: str) -> LocalFile:
    """`path` (followed if a link) to land at `rel`."""
    check_name(rel)
    try:
        info = path.stat()
    except OSError as error:
        raise unreadable(path, error) from None
    return LocalFile(rel, path, info.st_size, bool(info.st_mode & stat.S_IXUSR))


def check_name(rel: str) -> None:
    # Far-side scripts answer in tab-separated lines; a name holding a control character
    # would be cut there.
    if any(ord(c) < 32 or c == "\x7f" for c in rel):
        raise app_error(
            Kind.INVALID_PATH,
            f"cannot ship {rel!r}: its name holds a control character (a tab or a newline); "
            "rename it or ignore it.",
        )


def unreadable(path: Path, error: OSError) -> RpcError:
    return app_error(
        Kind.LOCAL_FILE_MISSING,
        f"cannot read {str(path)!r}: {error.strerror or error}; nothing was shipped.",
    )
