"""What reading metrics from a log costs the daemon: CPU seconds and points for hostile and
ordinary logs, fed as a tail feeds them (1 MiB reads), then as slow polls do (64 KiB reads,
every byte parsed). Not part of run_all; run it alone:

    python -m bench.metrics_parse
"""

from __future__ import annotations

import math
import time
import tracemalloc
from collections.abc import Callable

from rtrain.daemon.metrics.run_series import RunSeries

READ = 1 << 20


def _feed(data: bytes) -> RunSeries:
    series = RunSeries()
    for offset in range(0, len(data), READ):
        series.feed("log", offset, data[offset : offset + READ])
    return series


def _log(name: str, make: Callable[[], bytes]) -> None:
    data = make()
    # CPU seconds, the best of three: on a shared machine the others' load only adds time.
    seconds = math.inf
    for _ in range(3):
        started = time.process_time()
        series = _feed(data)
        seconds = min(seconds, time.process_time() - started)
    # Memory in a second pass: tracing allocations slows Python far too much to time it.
    tracemalloc.start()
    _feed(data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    points = sum(len(s.steps) for s in series.series.values())
    print(
        f"{name:<40} {len(data) / 1e6:7.1f} MB  {seconds:6.2f} s  "
        f"{len(data) / 1e6 / seconds:7.1f} MB/s  {points:6d} points  peak {peak / 1e6:5.1f} MB"
    )


def main() -> None:
    _log(
        "10^6 step lines",
        lambda: b"".join(b"step %d | loss %.4f\n" % (i, 1 / (i + 1)) for i in range(10**6)),
    )
    _log("one 3 MB line", lambda: b"x" * 3_000_000 + b"\nstep 1 | loss 1.0\n")
    _log(
        "HF dicts under a tqdm bar (10^5)",
        lambda: b"".join(
            b"\r %d%%|##| %d/100000 [00:01<00:09, 9.9it/s]\r\r{'loss': 0.5, 'epoch': 0.1}\n"
            % (i // 1000, i)
            for i in range(10**5)
        ),
    )
    _log(
        "a thousand metric names",
        lambda: b"".join(b"step %d | m%d 1.5\n" % (i, i % 1000) for i in range(10**5)),
    )
    # The formats the general rule reads, and the text it must pass over quickly.
    _log(
        "nanoGPT iter lines, rank-tagged (10^5)",
        lambda: b"".join(
            b"[rank0]: iter %d: loss %.4f, time 14.01ms, mfu 0.01%%\n" % (i, 1 / (i + 1))
            for i in range(10**5)
        ),
    )
    _log(
        "transformers 5 dicts (10^5)",
        lambda: b"".join(
            b"{'loss': '%.4g', 'grad_norm': '0.5436', 'learning_rate': '0.000425', "
            b"'epoch': '0.5469'}\n" % (1 / (i + 1))
            for i in range(10**5)
        ),
    )
    _log(
        "prose, paths, warnings (10^5)",
        lambda: b"".join(
            b"2024-05-01 12:30:45,123 - WARNING - loss of precision in /data/step_%d/x.pt "
            b"(torch 2.1.0, see https://example.com/a?step=%d)\n" % (i, i)
            for i in range(10**5)
        ),
    )
    # Every byte parsed: 64 KiB reads, as the monitor brings a log that grows slowly.
    global READ
    READ = 64 * 1024
    _log(
        "10^6 step lines, all parsed",
        lambda: b"".join(b"step %d | loss %.4f\n" % (i, 1 / (i + 1)) for i in range(10**6)),
    )
    _log(
        "nanoGPT lines, all parsed (10^5)",
        lambda: b"".join(
            b"iter %d: loss %.4f, time 14.01ms, mfu 0.01%%\n" % (i, 1 / (i + 1))
            for i in range(10**5)
        ),
    )
    _log(
        "prose lines, all parsed (10^5)",
        lambda: b"".join(
            b"2024-05-01 12:30:45,123 - INFO - loading shard %d of the dataset\n" % i
            for i in range(10**5)
        ),
    )


if __name__ == "__main__":
    main()
