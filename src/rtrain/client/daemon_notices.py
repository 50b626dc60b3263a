"""What a client tells its user about the daemon it reached: the daemon's start-up notices,
and settings of this shell that the running daemon does not use. Both clients share it."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from rtrain.protocol import daemon_process


def tell(notices: Sequence[str], daemon_settings: Mapping[str, str]) -> None:
    """One line on stderr per notice, and one sentence when the settings differ."""
    for notice in notices:
        print(f"rtrain: {notice}", file=sys.stderr)
    sentence = drift_sentence(daemon_settings, daemon_process.settings(os.environ))
    if sentence:
        print(f"rtrain: {sentence}", file=sys.stderr)


def drift_sentence(daemon_settings: Mapping[str, str], mine: Mapping[str, str]) -> str | None:
    theirs = daemon_process.settings_drift(daemon_settings, mine)
    if not theirs:
        return None
    ours = daemon_process.settings_drift(mine, daemon_settings)
    return (
        f"the running daemon was started with {', '.join(theirs)}, unlike this shell "
        f"({', '.join(ours)}); run `rtrain daemon stop` and the next command starts one with "
        "this shell's settings (runs on hosts are not affected)."
    )
