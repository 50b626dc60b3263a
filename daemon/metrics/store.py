"""Every watched run's series and every host's recent GPU samples, in the daemon's memory.

Bounded: MAX_RUNS runs (the least recently fed goes first) and GPU_HISTORY samples per host.
Nothing here is kept across a daemon restart: the monitor reads the runs' logs again.
"""

from __future__ import annotations

import asyncio
import math
from collections import OrderedDict, deque

import msgspec

from rtrain.protocol.messages import GpuSample, Progress, RunInfo, Series

from .gpu_telemetry import run_gpus
from .log_formats import Progress as BarProgress
from .run_series import RunSeries

MAX_RUNS = 256
GPU_HISTORY = 360

Key = tuple[str, str]


class MetricsStore:
    def __init__(self) -> None:
        self._runs: OrderedDict[Key, RunSeries] = OrderedDict()
        self._gpus: dict[str, deque[GpuSample]] = {}
        self._waiters: set[asyncio.Future[None]] = set()

    # ---- feeding ------------------------------------------------------------------------

    def feed(
        self, host: str, run_id: str, source: str, offset: int, data: bytes, restarted: bool
    ) -> bool:
        """Bytes [offset, offset+len) of a run's `source` ("log" or "jsonl"); True when the
        run's points or progress changed (and so waiters were woken)."""
        changed = self._series(host, run_id).feed(source, offset, data, restarted)
        if changed:
            self._wake()
        return changed

    def consumed(self, host: str, run_id: str, source: str) -> int:
        series = self._runs.get((host, run_id))
        return series.consumed(source) if series is not None else 0

    def add_gpu_sample(self, host: str, sample: GpuSample) -> None:
        history = self._gpus.setdefault(host, deque(maxlen=GPU_HISTORY))
        history.append(sample)
        self._wake()

    # ---- reading ------------------------------------------------------------------------

    def gpu_history(self, host: str) -> list[GpuSample]:
        return list(self._gpus.get(host, ()))

    def latest_gpus(self, host: str) -> GpuSample | None:
        history = self._gpus.get(host)
        return history[-1] if history else None

    def seq(self, host: str, run_id: str) -> int:
        series = self._runs.get((host, run_id))
        return series.seq if series is not None else 0

    def series(self, host: str, run_id: str, after: int = 0) -> list[Series]:
        """Each series' points newer than seq `after` (all of them for 0)."""
        run = self._runs.get((host, run_id))
        if run is None:
            return []
        found = []
        for one in run.series.values():
            first = next((i for i, seq in enumerate(one.seqs) if seq > after), len(one.seqs))
            if first < len(one.seqs) or after == 0:
                found.append(
                    Series(
                        name=one.name,
                        steps=one.steps[first:],
                        values=[_finite(v) for v in one.values[first:]],
                    )
                )
        return found

    def latest(self, host: str, run_id: str) -> dict[str, float | None]:
        run = self._runs.get((host, run_id))
        return {k: _finite(v) for k, v in run.latest.items()} if run is not None else {}

    def progress(self, host: str, run_id: str) -> Progress | None:
        run = self._runs.get((host, run_id))
        return _progress(run.progress) if run is not None and run.progress else None

    def annotate(self, run: RunInfo) -> RunInfo:
        """`run` with what its log said: progress, latest values, its GPUs."""
        key = (run.host, run.run_id)
        sample = self.latest_gpus(run.host) if run.state == "running" else None
        gpus = run_gpus(sample.gpus, run.run_id) if sample is not None else []
        if key not in self._runs and not gpus:
            return run
        return msgspec.structs.replace(
            run,
            progress=self.progress(*key),
            latest=self.latest(*key) or None,
            gpus=gpus or None,
        )

    async def wait(self, timeout: float) -> None:
        """Until anything changes, or `timeout` seconds."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout)
        except TimeoutError:
            pass
        finally:
            self._waiters.discard(waiter)

    # ---- inside -------------------------------------------------------------------------

    def _series(self, host: str, run_id: str) -> RunSeries:
        key = (host, run_id)
        run = self._runs.get(key)
        if run is None:
            run = self._runs[key] = RunSeries()
            while len(self._runs) > MAX_RUNS:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(key)
        return run

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _progress(bar: BarProgress) -> Progress:
    percent = None
    if bar.total:
        percent = round(min(100.0, 100.0 * bar.n / bar.total), 1)
    return Progress(
        n=bar.n,
        total=bar.total,
        percent=percent,
        rate=bar.rate,
        eta=bar.remaining,
        elapsed=bar.elapsed,
    )
