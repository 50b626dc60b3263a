"""Which runs a reverse forward reaches: it listens on the 127.0.0.1 of the host rtrain
connects to, so only processes on that very machine reach it. A batch job's compute node and
the other nodes of a run across hosts have loopbacks of their own."""

from __future__ import annotations


def far_loopback_problem(host: str, runs_elsewhere: str) -> str:
    """The sentence for a reverse forward asked for a run that does not run on `host`."""
    return (
        f"--reverse listens on 127.0.0.1 of {host} itself, and this run does not run only "
        f"there ({runs_elsewhere}): its processes could not reach it. Leave out --reverse and "
        "point the trainer at an address its nodes reach."
    )
