"""Files written to a temp name and renamed into place, so a final name is always complete."""

from __future__ import annotations

import os


def write_atomically(path: str, data: bytes) -> None:
    directory = os.path.dirname(path) or "."
    temp = os.path.join(directory, f".{os.path.basename(path)}.tmp-{os.getpid()}")
    with open(temp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)
    try:  # make the rename itself durable; not every filesystem allows fsync on a directory
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass


def remove_stale_temp_files(directory: str, final_name: str = "") -> None:
    """Temp files left by a killed writer (SIGKILL, OOM, power loss) are never resumed from.
    Only ours go: `.{final_name}.tmp-PID` (any final name in our own folders)."""
    if not os.path.isdir(directory):
        return
    for name in os.listdir(directory):
        if name.startswith(f".{final_name}") and ".tmp-" in name:
            try:
                os.remove(os.path.join(directory, name))
            except OSError:
                pass
