"""The words a far-side script fails with (`error WORD ARGS...`, lib/core.sh's `fail`), decoded
once: the contract turns every `error` line into a FarError, and operations match its `word`,
never the text.

The scripts and this enum are kept equal by tests/remote/test_error_words.py.
"""

from __future__ import annotations

import logging
from enum import StrEnum

import msgspec

log = logging.getLogger(__name__)


class ErrorWord(StrEnum):
    """What went wrong on the far side, as the script's first word says it."""

    USAGE = "usage"
    BAD_WORKDIR = "bad_workdir"
    BAD_RUN_DIR = "bad_run_dir"
    BAD_RUN_ID = "bad_run_id"
    BAD_DEST = "bad_dest"
    BAD_NAME = "bad_name"
    BAD_SECRET = "bad_secret"
    BAD_TOKEN = "bad_token"
    BAD_GRACE = "bad_grace"
    BAD_IDLE = "bad_idle"
    BAD_PARTITION = "bad_partition"
    BAD_PYTHON = "bad_python"
    # Files and directories.
    WRITE = "write"
    UNREADABLE = "unreadable"
    MKDIR = "mkdir"
    CD = "cd"
    RM = "rm"
    CHMOD = "chmod"
    LINK = "link"
    MARK = "mark"
    META = "meta"
    CACHE = "cache"
    WORKDIR = "workdir"
    STEPS = "steps"
    WRAPPER = "wrapper"
    ENVIRONMENT = "environment"  # env_check.sh: the builder said nothing it knows
    MISMATCH = "mismatch"
    CHANGED = "changed"
    NOT_FOUND = "not_found"
    NOT_A_FILE = "not_a_file"
    PATH_OUTSIDE_RUN = "path_outside_run"
    # Runs.
    RUN_NOT_FOUND = "run_not_found"
    NO_RUN_DIR = "no_run_dir"
    NOT_A_RUN = "not_a_run"
    RUN_EXISTS = "run_exists"
    ALREADY_LAUNCHED = "already_launched"
    NEVER_LAUNCHED = "never_launched"
    NEVER_SUBMITTED = "never_submitted"
    RUNNING = "running"
    QUEUED = "queued"
    SURVIVED = "survived"
    GPUS = "gpus"
    BUSY = "busy"
    LAUNCH_TIMEOUT = "launch_timeout"
    DETACH_FAILED = "detach_failed"
    NO_PROGRAM = "no_program"
    NO_COMMAND = "no_command"
    NO_GUARD = "no_guard"
    NO_LOOP = "no_loop"
    # Tools the host lacks.
    NO_SETSID = "no_setsid"
    NO_TEE = "no_tee"
    NO_MV = "no_mv"
    NO_SBATCH = "no_sbatch"
    NO_SQUEUE = "no_squeue"
    NO_SCANCEL = "no_scancel"
    NO_TAR = "no_tar"
    NO_PYTHON = "no_python"
    ONE_PIECE = "one_piece"  # put_range.sh: several pieces in one stream need python3
    # A free port could not be read on the host (a multi-node run's rendezvous).
    NO_PORT = "no_port"
    # Slurm.
    SBATCH_REFUSED = "sbatch_refused"
    BATCH_SCRIPT = "batch_script"
    # Not printed: the contract's reading of the system's own message (ENOSPC), whichever
    # word the script failed with.
    DISK_FULL = "disk_full"
    # Not printed either: a word this version of rtrain does not know.
    OTHER = "other"


class FarError(msgspec.Struct, frozen=True):
    """One `error` line: its word decoded, the rest (a path, the system's message) as the
    script printed it, and the whole line for messages."""

    word: ErrorWord
    args: tuple[str, ...] = ()
    said: str = ""

    @property
    def arg(self) -> str:
        """The first word after the error word ("" when there is none)."""
        return self.args[0] if self.args else ""

    def __str__(self) -> str:
        return self.said


# The system's message for a full disk (strerror(ENOSPC)), as a script passes it on.
_DISK_FULL_TEXT = "No space"


def says_disk_full(text: str) -> bool:
    """The far side's words say its disk is full."""
    return _DISK_FULL_TEXT in text


def far_error(values: list[str] | None) -> FarError | None:
    """An `error` line's values as a FarError; None when the script printed none."""
    if values is None:
        return None
    said = " ".join(values)
    first, *rest = values or [""]
    try:
        word = ErrorWord(first)
    except ValueError:
        log.warning("a far-side script failed with %r, not a word this rtrain knows", first)
        word = ErrorWord.OTHER
    if word in _NOT_PRINTED:
        word = ErrorWord.OTHER  # a script never says these itself
    if says_disk_full(said):
        word = ErrorWord.DISK_FULL
    return FarError(word=word, args=tuple(rest), said=said)


_NOT_PRINTED = {ErrorWord.DISK_FULL, ErrorWord.OTHER}
