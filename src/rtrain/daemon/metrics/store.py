"""Every watched run's series and every host's recent GPU samples, in the daemon's memory.

Bounded: MAX_RUNS runs (the least recently fed goes first) and GPU_HISTORY samples per host.
Nothing here is kept across a daemon restart: the monitor reads the runs' logs again.

A run's metrics are final once its log and metrics.jsonl were read after it ended (watch.sh
reads the state first, the files after): the attempt so read is recorded, and a run that
ended unread (seen ended by `status`, say) is read once more by the monitor or by
`run/metrics`. A removed run is forgotten, so an id used again starts with nothing.
"""

from __future__ import annotations

import asyncio
import math
from collections import OrderedDict, deque

import msgspec

from rtrain.protocol.messages import GpuSample, Progress, RunInfo, Series
from rtrain.protocol.run_states import is_ended

from .gpu_telemetry import run_gpus
from .log_formats import Progress as BarProgress
from .run_series import RunSeries

MAX_RUNS = 256
GPU_HISTORY = 360
# Polls that may fail to bring an ended run's last bytes before the monitor stops trying
# (`run/metrics` still reads them when asked).
FINAL_TRIES = 3

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

    def saw_output(self, host: str, run_id: str, at: float) -> None:
        """The run's log last changed at `at` (epoch seconds, this machine's clock)."""
        self._series(host, run_id).last_output_at = at

    def forget(self, host: str, run_id: str) -> None:
        """Drop all of a run's metrics (it was removed; its id may be used again)."""
        self._runs.pop((host, run_id), None)

    def plan(self, host: str, run_id: str, epochs: int | None, steps: int | None) -> None:
        """How many epochs (and steps) the run's command says it trains for."""
        run = self._series(host, run_id)
        run.planned_epochs, run.planned_steps = epochs, steps

    def read_from(self, host: str, run_id: str, node: int) -> None:
        """The node of a run across hosts whose log holds its metrics (where global rank 0
        ran). Once that turns out to be another node than read so far, the points read from
        the other log go and reading starts over there (followers start over too)."""
        run = self._series(host, run_id)
        if run.node == node:
            return
        fresh = RunSeries()
        fresh.node = node
        fresh.generation = run.generation + 1
        fresh.last_output_at = run.last_output_at
        self._runs[(host, run_id)] = fresh
        self._wake()

    def saw_read(self, host: str, run_id: str, attempt: int, ended: bool) -> None:
        """A read of the run's files just came in; `ended`: its state was read, over, before
        them, so nothing more of `attempt` will come."""
        run = self._series(host, run_id)
        run.final_attempt = attempt if ended else None
        run.final_tries = 0
        # Nothing more will be drawn: what waited for the bar's next drawing is shown now.
        if ended and run.settle():
            self._wake()

    def final(self, host: str, run_id: str, attempt: int) -> bool:
        """Whether all that `attempt` of the run wrote has been read."""
        run = self._runs.get((host, run_id))
        return run is not None and run.final_attempt == attempt

    def unfinished(self) -> list[Key]:
        """Runs read while they ran but not yet after they ended (or running still)."""
        return [
            key
            for key, run in self._runs.items()
            if run.final_attempt is None and run.final_tries < FINAL_TRIES
        ]

    def final_read_failed(self, host: str, run_id: str) -> None:
        run = self._runs.get((host, run_id))
        if run is not None:
            run.final_tries += 1

    def give_up(self, host: str, run_id: str) -> None:
        """No more final reads of this run by the monitor."""
        run = self._runs.get((host, run_id))
        if run is not None:
            run.final_tries = FINAL_TRIES

    def generation(self, host: str, run_id: str) -> int:
        """Bumped when points went (a new attempt, a lower rank): followers start over."""
        run = self._runs.get((host, run_id))
        return run.generation if run is not None else 0

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
        series = self._runs.get(key)
        last_output = series.last_output_at if series is not None else None
        progress = self.progress(*key)
        if progress is not None and is_ended(run.state):
            # Where its bar stopped stands; a time left does not, once nothing runs.
            progress = msgspec.structs.replace(progress, eta=None)
        return msgspec.structs.replace(
            run,
            progress=progress,
            latest=self.latest(*key) or None,
            gpus=gpus or None,
            last_output_at=last_output if run.state == "running" else None,
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
