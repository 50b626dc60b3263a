"""What the trainer says: progress on stdout, one-line warnings and errors on stderr."""

from __future__ import annotations

import sys

PROGRAM = "demo_trainer"
EXIT_USAGE = 2
# Under torchrun every rank runs this code: rank 0 alone prints progress, and the others tag
# their warnings and errors with their rank.
_rank = {"rank": 0, "ranks": 1}


def set_rank(rank: int, ranks: int) -> None:
    _rank.update(rank=rank, ranks=ranks)


def _who() -> str:
    return f"{PROGRAM}[rank {_rank['rank']}]" if _rank["ranks"] > 1 else PROGRAM


class UserError(Exception):
    """A problem the user can fix (config, dataset, run dir): one sentence, exit code 2."""


def warn(message: str) -> None:
    print(f"{_who()}: warning: {message}", file=sys.stderr, flush=True)


def error(message: str) -> None:
    print(f"{_who()}: error: {message}", file=sys.stderr, flush=True)


def say(message: str) -> None:
    if _rank["rank"] == 0:
        print(message, flush=True)


def one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
