"""Log text from a far host is untrusted: escape sequences never reach the user's terminal raw."""

from __future__ import annotations

import re

# CSI, OSC (terminated by BEL or ST), other two-byte escapes, and C0 controls except \t \n \r.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, screen clears
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: window titles, hyperlinks, clipboard
    r"|\x1b[@-Z\\-_]"  # other escapes
    r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x9b]"  # C0 controls but tab, newline, CR; DEL; 8-bit CSI
)


def safe_for_terminal(text: str) -> str:
    """`text` without terminal control sequences. A carriage return stays, so a progress bar
    redraws in place as it would have on the trainer's own terminal."""
    return _ESCAPES.sub("", text)
