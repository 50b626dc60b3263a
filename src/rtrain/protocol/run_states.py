"""A run's states: the words, what each one means, and the one function that turns what was
observed of a run into its state. Sans-IO and standard library only: the client reads the
words too, and its start-up pays for every import.

Every question an operation asks of a state ("is it over?", "does the monitor ask about
it?", "does the host bill it?") is a predicate here; no other module keeps a set of states.

Everything that decides a run's state lives here, as data (h11's rule): which state may
follow which (`_MAY_FOLLOW`, applied by `advance` where the daemon records every run), how a
run ended (`Ending`: the state it reads as and whether a retry policy starts it again), and
which state an observation makes (`next_state`).
"""

from __future__ import annotations

from collections.abc import Iterable
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


# ---- transitions -------------------------------------------------------------------------

# Which states a recorded run may take next, within one attempt. A settled run has the far
# side's own word on how it ended: no later look changes it (a restart begins a new attempt,
# which may take any state). Every other state is a view that the next look may revise.
_MAY_FOLLOW: Final[dict[RunState, frozenset[RunState]]] = {
    "queued": frozenset(RUN_STATES),
    "running": frozenset(RUN_STATES),
    "unknown": frozenset(RUN_STATES),
    "lost": frozenset(RUN_STATES),
    "completed": frozenset({"completed"}),
    "failed": frozenset({"failed"}),
    "stopped": frozenset({"stopped"}),
}


def may_follow(before: RunState, after: RunState) -> bool:
    """Whether a run that was `before` may become `after` within the same attempt."""
    return after in _MAY_FOLLOW[before]


def advance(before: RunState | None, after: RunState, new_attempt: bool) -> RunState:
    """The state a run is recorded in when `after` is what was seen of it: `after`, unless
    the run had settled in this attempt already (then it keeps `before`). A run seen for
    the first time, or starting a new attempt, takes any state."""
    if before is None or new_attempt or may_follow(before, after):
        return after
    return before


# ---- how a run ended ---------------------------------------------------------------------

# How a run ended, typed (dstack's JobTerminationReason): `completed`; `exited` (its own
# non-zero exit or signal, or a scheduler's failure such as TIMEOUT); `stopped` (a person's
# stop, or a scheduler's cancel); `max_duration` and `stall` (one of its limits stopped it);
# `vanished` (its processes or its directory went without a status: an OOM kill, a reboot,
# NODE_FAIL); `never_launched` (its directory was made, its trainer never started).
Ending = Literal[
    "completed", "exited", "stopped", "max_duration", "stall", "vanished", "never_launched"
]
ENDINGS: Final[tuple[Ending, ...]] = get_args(Ending)


class EndingRule(NamedTuple):
    """What an ending means: the state the run reads as, and the retry policies (`retryOn`)
    that start it again."""

    state: RunState
    retried_on: frozenset[RetryOn]


_ENDING_RULES: Final[dict[Ending, EndingRule]] = {
    "completed": EndingRule("completed", frozenset()),
    "exited": EndingRule("failed", frozenset({"failed"})),
    "stopped": EndingRule("stopped", frozenset()),
    "max_duration": EndingRule("stopped", frozenset()),
    "stall": EndingRule("stopped", frozenset()),
    "vanished": EndingRule("lost", frozenset({"lost", "failed"})),
    # No command ever ran: there is nothing to run again.
    "never_launched": EndingRule("lost", frozenset()),
}


def ending_rule(ending: Ending) -> EndingRule:
    return _ENDING_RULES[ending]


def ending_of(state: RunState, said: Ending | None = None) -> Ending | None:
    """How a run in `state` ended: `said` (what the far side or a limit said of it) where
    it agrees with the state, else the plain ending of the state; None while not ended."""
    if not is_ended(state):
        return None
    if said is not None and _ENDING_RULES[said].state == state:
        return said
    return _PLAIN_ENDING[state]


_PLAIN_ENDING: Final[dict[RunState, Ending]] = {
    "completed": "completed",
    "failed": "exited",
    "stopped": "stopped",
    "lost": "vanished",
}


def is_retried(ending: Ending | None, on: RetryOn) -> bool:
    """Whether a run that ended so is started again by a retry policy of `on`."""
    return ending is not None and on in _ENDING_RULES[ending].retried_on


# How a run of several parts (the nodes of a run across hosts) takes its end from theirs,
# first to last: a part whose run dir is gone (`missing`) or lost explains the others'
# ranks failing in collectives after it vanished; a failure explains the parts rtrain took
# down after it (stopped).
_PARTS_ENDING: Final = ("missing", "lost", "failed", "stopped")


def part_ending_rank(state: str) -> int | None:
    """Where a part's end comes in explaining the whole run's (lower explains more), or
    None when the part has not ended, or completed."""
    return _PARTS_ENDING.index(state) if state in _PARTS_ENDING else None


# A group of ended runs (a sweep) ends as its worst: a failure says more than a run whose
# end is unknown (lost), which says more than a person's stop.
_GROUP_ENDING: Final = ("failed", "lost", "stopped", "completed")


def group_ending(states: Iterable[str]) -> str:
    """How a group of ended runs ended as one: the worst of their states."""
    seen = set(states)
    return next((state for state in _GROUP_ENDING if state in seen), "completed")


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
