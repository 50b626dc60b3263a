"""Repeated measurements of one quantity: median and spread, and how two compare."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Sample:
    """Values of one quantity (seconds, MB/s, ...) from repeated runs."""

    values: list[float] = field(default_factory=list)

    def add(self, value: float) -> None:
        self.values.append(value)

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else float("nan")

    def quantile(self, q: float) -> float:
        """Linear interpolation between the closest ranks (q in 0..1)."""
        if not self.values:
            return float("nan")
        ordered = sorted(self.values)
        position = q * (len(ordered) - 1)
        low = int(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    @property
    def spread(self) -> tuple[float, float]:
        """The interquartile range: half of the runs fall inside it."""
        return self.quantile(0.25), self.quantile(0.75)

    def to_dict(self) -> dict[str, object]:
        low, high = self.spread
        return {"median": self.median, "q1": low, "q3": high, "n": self.n, "values": self.values}


def ratio(slower: Sample, faster: Sample) -> float:
    """How many times `faster` beats `slower`, median against median."""
    return slower.median / faster.median if faster.median else float("nan")


@contextmanager
def stopwatch() -> Iterator[Callable[[], float]]:
    """`with stopwatch() as elapsed: ...; elapsed()` -> seconds since the block began."""
    started = time.perf_counter()
    ended: list[float] = []

    def elapsed() -> float:
        return (ended[0] if ended else time.perf_counter()) - started

    try:
        yield elapsed
    finally:
        ended.append(time.perf_counter())
