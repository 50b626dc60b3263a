"""Disk: the work directory's free space against what `start` would ship, plus a margin."""

from __future__ import annotations

import os
from pathlib import Path

from rtrain.protocol.byte_sizes import human_bytes
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import DiskCheck

# Room beyond the inputs for what a run writes beside them (logs, checkpoints to come):
# a tenth of the inputs, and never less than this.
MIN_MARGIN = 64 * 1024 * 1024


def ship_bytes(inputs: list[str]) -> int:
    """The bytes of these local files and directory trees; a sentence for one that is missing."""
    total = 0
    for text in inputs:
        path = Path(text)
        try:
            if path.is_dir():
                for folder, _dirs, files in os.walk(path):
                    for name in files:
                        total += (Path(folder) / name).stat().st_size
            else:
                total += path.stat().st_size
        except FileNotFoundError:
            raise app_error(
                Kind.LOCAL_FILE_MISSING, f"input {text!r} does not exist on this machine."
            ) from None
        except OSError as error:
            raise app_error(
                Kind.LOCAL_FILE_MISSING,
                f"input {text!r} cannot be read on this machine: {error.strerror or error}.",
            ) from None
    return total


def margin_for(shipped: int) -> int:
    return max(shipped // 10, MIN_MARGIN)


def judge_disk(shipped: int | None, free: int | None) -> tuple[DiskCheck | None, str | None]:
    """The check, and the reason when the inputs do not fit; nothing without inputs."""
    if shipped is None or free is None:
        return None, None
    margin = margin_for(shipped)
    check = DiskCheck(
        free_bytes=free, ship_bytes=shipped, margin_bytes=margin, ok=free >= shipped + margin
    )
    if check.ok:
        return check, None
    return check, (
        f"not enough disk: the workdir has {human_bytes(free)} free, and start would ship "
        f"{human_bytes(shipped)} plus a margin of {human_bytes(margin)}"
    )
