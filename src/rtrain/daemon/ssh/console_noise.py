"""Getting base64 back out of what a terminal printed around it.

A console session's output can carry anything a terminal emits: colour and cursor escapes,
window titles (OSC), bracketed-paste switches, carriage returns, echoed input and line
wrapping. The agent's payloads are base64 between markers, so the defence is to drop every
escape sequence whole (its parameters hold letters and digits that would pass as base64)
and then every byte outside the base64 alphabet. What survives is checked by sha256; noise
that still got through is a damaged reply, never a wrong one.
"""

from __future__ import annotations

import base64
import binascii
import re

# OSC (title etc.) up to BEL or ST; CSI with parameters; DCS/SOS/PM/APC strings up to ST;
# then any other two-byte escape. 8-bit CSI (0x9b) is not treated: the stream is UTF-8.
_ESCAPE = re.compile(
    rb"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    rb"|\x1b\[[0-?]*[ -/]*[@-~]"
    rb"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    rb"|\x1b[ -/]*[0-~]"
)
_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
_NOT_BASE64 = bytes(byte for byte in range(256) if byte not in _ALPHABET)


def strip_escapes(raw: bytes) -> bytes:
    """`raw` without terminal escape sequences and carriage returns."""
    return _ESCAPE.sub(b"", raw).replace(b"\r", b"")


def base64_payload(raw: bytes) -> bytes | None:
    """The bytes a base64 block between two markers stands for; None when it cannot be one."""
    # bytes.translate drops the rest at C speed; the regex runs only when there is an escape.
    if b"\x1b" in raw:
        raw = _ESCAPE.sub(b"", raw)
    text = raw.translate(None, _NOT_BASE64)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
