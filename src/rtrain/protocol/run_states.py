"""A run's states: the words, what each one means, and the one function that turns what was
observed of a run into its state. Sans-IO and standard library only: the client reads the
words too, and its start-up pays for every import.

Every question an operation asks of a state ("is it over?", "does the monitor ask about
it?", "does the host bill it?") is a predicate here; no other module keeps a set of states.
"""

from __future__ import annotations

from typing import Final, Literal, NamedTuple, get_args, overload

# `queued`: waiting on the host for what it needs (free GPUs, a scheduler); `reason` says what.
RunState = Literal["queued", "running", "completed", "failed", "stopped", "lost", "unknown"]
RUN_STATES: Final[tuple[RunState, ...]] = get_args(RunState)

# Over: nothing of the run runs any more, and no look will start it again (a restart makes
# a new attempt).
_ENDED: Final = frozenset({"completed", "failed", "stopped", "lost"})
# Ended with its own word on how (an exit status, a stop): a later look says the same. A
# `lost` run is asked again, since the far side may say more once the host is back.
_SETTLED: Final = frozenset({"completed", "failed", "stopped"})
# What the far side last said holds a host (or a place in a queue) for the run.
_LIVE: Final = frozenset({"queued", "running"})
# Where the state alone leaves the question open: what it waits for, why it is not known,
# how it was lost.
_SHOWS_REASON: Final = frozenset({"queued", "unknown", "lost"})


def is_ended(state: str) -> bool:
    """The run is over: completed, failed, stopped or lost."""
    return state in _ENDED


def is_active(state: str) -> bool:
    """Not over, as far as rtrain knows: queued, running, or unknown (the host did not
    answer, so it may still run). The monitor polls these runs, and a terminate counts
    their work directories as busy."""
    return state not in _ENDED


def is_live(state: str) -> bool:
    """The far side said the run holds its host or waits for it: queued or running. A stop
    has work to do, a restart or a removal is refused, a log is still to come."""
    return state in _LIVE


def is_writing(state: str) -> bool:
    """The run's trainer may be writing its log and metrics now: running, or unknown (it may
    still run). A follower of its points goes on (docs/protocol.md, `run/metrics`)."""
    return state == "running" or state == "unknown"


def is_settled(state: str) -> bool:
    """Ended with the far side's own word on how (completed, failed, stopped): the answer
    stands, and a status needs no round trip to the host."""
    return state in _SETTLED


def shows_reason(state: str) -> bool:
    """The run's reason is part of how its state reads (`queued (waiting for GPUs)`,
    `unknown (host unreachable: ...)`, `lost (never launched)`)."""
    return state in _SHOWS_REASON


def is_billed(state: str) -> bool:
    """The host's time counts toward the run's cost from the moment its attempt is seen in
    this state: running, or ended (an end seen with no run between bills from the launch).
    Not while queued; `unknown` says nothing, and keeps what was counted."""
    return state != "queued" and state != "unknown"


# What ends a run with a retry left start its next attempt: `lost` (its processes vanished
# without a status, or its host came back without it), or `failed` as well.
RetryOn = Literal["lost", "failed"]
RETRY_ON: Final[tuple[RetryOn, ...]] = get_args(RetryOn)

# How a run of several parts (the nodes of a run across hosts) takes its end from theirs,
# first to last: a part whose run dir is gone (`missing`) or lost explains the others'
# ranks failing in collectives after it vanished; a failure explains the parts rtrain took
# down after it (stopped).
_PARTS_ENDING: Final = ("missing", "lost", "failed", "stopped")


def part_ending_rank(state: str) -> int | None:
    """Where a part's end comes in explaining the whole run's (lower explains more), or
    None when the part has not ended, or completed."""
    return _PARTS_ENDING.index(state) if state in _PARTS_ENDING else None


# The active states as a tuple, for a query that selects them (the registry's).
ACTIVE_STATES: Final[tuple[RunState, ...]] = tuple(s for s in RUN_STATES if is_active(s))


# ---- observations ------------------------------------------------------------------------


class FarSide(NamedTuple):
    """A state word the far side printed for the run (status.sh's row, a scheduler's verdict
    turned into one)."""

    word: str


class HostSilent(NamedTuple):
    """The host did not answer (unreachable, timed out, refused the login)."""


class Vanished(NamedTuple):
    """No run directory where the run lives, on `looks` looks in a row."""

    looks: int


Observation = FarSide | HostSilent | Vanished
# How many looks in a row must find a run's directory gone before the run is `lost`.
LOOKS_BEFORE_GONE: Final = 2


@overload
def next_state(seen: FarSide | HostSilent) -> RunState: ...
@overload
def next_state(seen: Vanished) -> RunState | None: ...
def next_state(seen: Observation) -> RunState | None:
    """The run's state after `seen`; None: not decided, look again first.

    Unknown is never guessed: a host that did not answer, or a word this version does not
    know, makes the run `unknown` (never running, never lost). Gone only after a second
    look: a directory missing once may be a moment of a shared file system; the run is
    lost when the next look finds it missing too.
    """
    if isinstance(seen, HostSilent):
        return "unknown"
    if isinstance(seen, Vanished):
        return "lost" if seen.looks >= LOOKS_BEFORE_GONE else None
    return state_word(seen.word) or "unknown"


def state_word(word: str) -> RunState | None:
    """`word` as a RunState; None when it is none of rtrain's words."""
    for state in RUN_STATES:
        if word == state:
            return state
    return None
