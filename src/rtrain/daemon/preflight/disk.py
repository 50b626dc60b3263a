"""Disk: the work directory's free space against what `start` would ship, plus a margin."""

from __future__ import annotations

import os
from pathlib import Path

from rtrain.daemon.operations.run_inputs import Inputs, InputSources, gather
from rtrain.protocol.byte_sizes import human_bytes
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import DiskCheck

# Room beyond the inputs for what a run writes beside them (logs, checkpoints to come):
# a tenth of the inputs, and never less than this.
MIN_MARGIN = 64 * 1024 * 1024


def would_ship(
    inputs: list[str],
    *,
    config: str | None = None,
    code: str | None = None,
    include: list[str] | None = None,
    follow_links: bool = False,
) -> Inputs | None:
    """What start would ship: the very files start gathers (the code directory with its
    rules), or a sentence for a missing or clashing input; None without inputs. `inputs`
    (datasets, other files) land under their base names."""
    if not inputs and config is None and code is None:
        return None
    from rtrain.daemon.operations.command_template import CONFIG_NAME
    from rtrain.daemon.operations.start import RESERVED
    from rtrain.daemon.operations.start_plan import DEMO_TRAINER

    for text in [*inputs, *([config] if config else []), *([code] if code else [])]:
        if not os.path.exists(text):
            raise app_error(
                Kind.LOCAL_FILE_MISSING, f"input {text!r} does not exist on this machine."
            )
    sources = InputSources(
        config=Path(config) if config else None,
        config_name=CONFIG_NAME,
        datasets=[Path(text) for text in inputs],
        code=Path(code) if code else None,
        extra={},
        reserved=RESERVED - {DEMO_TRAINER},
        include=include,
        follow_links=follow_links,
    )
    return gather(sources)


def inputs_text(inputs: Inputs) -> str:
    """`start would ship N files (SIZE)`, and what the code's ignore rules leave home."""
    count = len(inputs.files)
    size = human_bytes(inputs.total_bytes)
    text = f"start would ship {count} file{'s' if count != 1 else ''} ({size})"
    tree = inputs.code
    if tree is not None and tree.left_home:
        files = sum(h.files for h in tree.left_home)
        left = human_bytes(sum(h.size for h in tree.left_home))
        first = ", ".join(f"{h.path} ({h.rule})" for h in tree.left_home[:3])
        more = len(tree.left_home) - 3
        text += (
            f"; {tree.rules} leaves home {files} file{'s' if files != 1 else ''} "
            f"({left}): {first}{f' and {more} more' if more > 0 else ''}"
        )
    return text


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
