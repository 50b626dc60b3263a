"""What stands before a log line's own text: terminal colours and a rank's tag.

torch >= 2 prefixes a rank's output with `[rank1]: `, torchrun's `--tee` and its log files
with `[default0]:` (the role's name, then the local rank), and rtrain's merged rank logs with
`[rankN]: `. A line's metrics are read after the tag; the tag says whose they are.
"""

from __future__ import annotations

import re

# Up to 32 letters (a role name: `rank`, `default`, ...), up to 5 digits, `]:`.
_RANK_TAG = re.compile(r"\[[A-Za-z_]{0,32}(\d{1,5})\]:[ \t]?")
# CSI sequences (colours, cursor moves) and OSC titles, as coloured loggers write them.
_ANSI = re.compile(r"\x1b(?:\[[0-9;?]{0,32}[A-Za-z]|\][^\x07\x1b]{0,256}(?:\x07|\x1b\\))")
# torchrun under torch's own prefixing may stack two tags; more is not a rank's tag.
MAX_TAGS = 2


def without_ansi(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text else text


def split_rank(text: str) -> tuple[int | None, str]:
    """The rank a leading tag names (the first tag's), and the text after the tags."""
    rank = None
    for _ in range(MAX_TAGS):
        if not text.startswith("["):
            break
        match = _RANK_TAG.match(text)
        if match is None:
            break
        if rank is None:
            rank = int(match[1])
        text = text[match.end() :].lstrip()
    return rank, text
