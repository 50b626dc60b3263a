"""How a file is cut into pieces and how many channels carry them (no I/O here).

One SSH channel carries at most one window (about 2 MB) per round trip, so a long link needs
several channels at once; on a short one they only share the same CPU. Each piece is verified
on its own. A cut fetch keeps more than its whole pieces: the bytes of a piece in flight that
landed are kept too, once the far side's hash of them agrees (fetching.py); a cut upload keeps
its whole pieces, so PIECE keeps the channels times PIECE under a seventh of a large file.
"""

from __future__ import annotations

import math

MIB = 1024 * 1024
# Every offset is a multiple of this (the far side's dd writes in whole MiB blocks).
ALIGN = MIB
PIECE = 16 * MIB
# A large file is fetched in larger pieces: each piece costs a channel's opening (a round
# trip or two, and a far script's start), and a cut fetch keeps what landed of a piece in
# flight anyway. Chosen by size alone, so that a resumed fetch cuts the file as the first one
# did (and the ranges of smaller pieces an older fetch verified still join up).
LARGE_PIECE = 64 * MIB
LARGE_FILE = 512 * MIB
# How often a fetch notes how far each piece in flight has landed: a daemon killed in the
# middle loses at most this much of each piece in flight (a cut or Ctrl-C notes exactly).
# Each note rewrites the partial copy's record: every MiB, that was a tenth of the daemon's
# time in a 1 GB fetch.
LANDED_STEP = 4 * MIB
# Channels beyond the two long-lived shells: sshd's default MaxSessions is 10.
MOST_CHANNELS = 8
# Consecutive pieces of an upload one channel and one far process carry, at most: each is
# still verified and marked on its own as it lands (a cut keeps it), but a channel's opening
# and a far process's start (two round trips or more) are paid once for all of them.
RUN_OF_PIECES = 4


def channels_for(size: int, round_trip: float, configured: int | None = None) -> int:
    """How many channels carry a file of `size` bytes over a link of `round_trip` seconds;
    `configured` (the host's `channels` setting) replaces the choice by round trip."""
    if configured is not None:
        wanted = configured
    elif round_trip < 0.005:
        wanted = 2
    elif round_trip < 0.040:
        wanted = 4
    else:
        wanted = MOST_CHANNELS
    return max(1, min(wanted, math.ceil(size / PIECE) or 1))


def fetch_pieces(size: int) -> list[tuple[int, int]]:
    """The pieces a fetch cuts a far file of `size` bytes into."""
    return pieces(size, LARGE_PIECE if size >= LARGE_FILE else PIECE)


def pieces(size: int, piece: int = PIECE) -> list[tuple[int, int]]:
    """(offset, length) of each piece of a file of `size` bytes; one empty piece for an empty
    file, so that it too is sent and verified."""
    assert piece % ALIGN == 0
    if size == 0:
        return [(0, 0)]
    return [(offset, min(piece, size - offset)) for offset in range(0, size, piece)]


def missing(cut: list[tuple[int, int]], verified: dict[int, int]) -> list[tuple[int, int]]:
    """(offset, length) of what each piece of `cut` still lacks, given the byte ranges
    already verified (offset -> length): a piece is verified from its start in one or more
    ranges (a whole piece, or what landed of it before a cut and then its rest), so what
    is missing is the end of it past the last range that joins up."""
    todo = []
    for offset, length in cut:
        end = offset + length
        at = offset
        while at < end and verified.get(at, 0) > 0:
            at += verified[at]
        if at < end or (length == 0 and offset not in verified):
            todo.append((at, end - at))
    return todo


def runs(todo: list[tuple[int, int]], lanes: int) -> list[list[tuple[int, int]]]:
    """The pieces `todo` (offset, length) in runs of consecutive ones, each run one stream:
    at most RUN_OF_PIECES long, and short enough that every lane gets a run."""
    most = max(1, min(RUN_OF_PIECES, len(todo) // max(1, lanes)))
    found: list[list[tuple[int, int]]] = []
    for offset, length in sorted(todo):
        last = found[-1] if found else None
        if last and len(last) < most and last[-1][0] + last[-1][1] == offset:
            last.append((offset, length))
        else:
            found.append([(offset, length)])
    return found
